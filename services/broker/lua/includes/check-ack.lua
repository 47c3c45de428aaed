--@include ack-verdict
--@include ckey
--@include id-cmp
--@include lease-answers
--@include position

-- The answer recorded under lease for the ack of (p, txn) (false if none): 'done:0', 'failed:1'...
local function ack_memo(base, lease, p, txn)
  if lease == '' then return false end
  local v = redis.call('HMGET', base .. 'la:' .. lease, answer_field(p, txn), record_field(p))
  if v[1] then return v[1] end
  if v[2] then
    local answer, members = record_members(v[2])
    if members[txn] then return answer end
  end
  return false
end

-- Checks an ack without changing anything (ack_verdict on the stored state). Returns id (the
-- transactionId when retention removed the message), or nil and the refusal.
local function check_ack(base, p, g, txn, lease, status, now)
  local memo = ack_memo(base, lease, p, txn)
  local d = redis.call('HGET', base .. 'd:' .. p, txn)
  local id, resolved, st = txn, false, {}
  -- Retention may have removed the message since the answer was recorded; a partition that
  -- is gone (its queue deleted) has no messages to answer for, as in process.
  if not d and memo and redis.call('HEXISTS', base .. 'parts', p) == 0 then memo = false end
  if d then
    id = string.match(d, '^(%S+)')
    local pos = position(base, p, g)
    resolved = id_cmp(id, pos) <= 0 or redis.call('SISMEMBER', base .. 'a:' .. p .. ':' .. g, id) == 1
    st = redis.call('HMGET', ckey(base, p, g), 'lease', 'exp')
  end
  local verdict = ack_verdict(lease, status, memo, d, resolved, st[1] or false, tonumber(st[2] or '0'), now)
  if verdict and verdict[1] == 0 then return nil, verdict[2] end
  return id, nil
end
