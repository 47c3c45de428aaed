-- What an ack asks for, for repeat detection: completed and success are one answer, failed
-- and retry another; dlq its own.
local function ack_class(status)
  if status == 'completed' or status == 'success' then return 'done' end
  if status == 'dlq' then return 'dlq' end
  return 'failed'
end

--[[
  Whether an ack repeats one already applied (a client retry, or ioredis resending a script
  whose reply was lost). Returns false when it does not, else err (nil: a repeat, answered as
  a success flagged `repeat`) and dlq (what the first answer reported). With a lease, the
  answer recorded under it decides (same status class: repeat; another: refused); without
  one the lease check follows, so a stale consumer is still told its lease expired. Without a
  lease, a resolved message repeats a completed/success ack (other statuses cannot be told
  apart from a conflicting answer and fall through to 'Message already acknowledged').
]]
local function ack_repeat(lease, memo, status, resolved)
  if memo then
    local class, dlq = string.match(memo, '^(%a+):(%d)$')
    if class == ack_class(status) then return true, nil, tonumber(dlq) end
    return true, 'Message already acknowledged', 0
  end
  if lease == '' and resolved and ack_class(status) == 'done' then return true, nil, 0 end
  return false
end

--[[
  The rules of one ack, before anything is written (ack_many applies them to every ack, the
  transaction script checks its acks with them through check_ack). Returns nil when the ack
  is to be applied, else its answer { ok, err, released, dlq, repeat }: a refusal, or a repeat
  of an ack already applied. memo: the answer recorded under its lease (false if none); found:
  the message is retained; resolved: group g resolved it; held, exp: the lease group g holds
  on the partition and its expiry.
]]
local function ack_verdict(lease, status, memo, found, resolved, held, exp, now)
  if not found then
    -- Retention may have removed the message since the answer was recorded.
    if not memo then return { 0, 'Message not found', 0, 0, 0 } end
    resolved = true
  end
  local seen, err, dlq = ack_repeat(lease, memo, status, resolved)
  if seen then
    if err then return { 0, err, 0, 0, 0 } end
    return { 1, '', 0, dlq, 1 }
  end
  if lease ~= '' and (held ~= lease or exp <= now) then return { 0, 'Invalid or expired lease', 0, 0, 0 } end
  if resolved then return { 0, 'Message already acknowledged', 0, 0, 0 } end
  return nil
end
