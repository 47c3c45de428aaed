--[[
  Moves dead letters back into their partition as new messages (same transactionId, payload,
  trace and producer; a new message id). Every group of the queue sees the requeued message.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1..] pairs: dead-letter stream id, new messageId
  Returns the number requeued.
  Resend-safe: per request id. The first new messageId (fresh per call) names the call: the count
  is kept under <base>rq:<messageId> for ANSWER_MEMORY_MS, and a second run answers it without
  touching anything (the dead letters are gone by then anyway).
]]
--@include age-horizon
--@include answer-memory
--@include clock
--@include entry-id
--@include field
--@include forget-entry
--@include queue-config
--@include record-of
--@include schedule-trim

local base = KEYS[1]
if #ARGV < 2 then return 0 end
local requeue_memo = base .. 'rq:' .. ARGV[2]
local answered = redis.call('GET', requeue_memo)
if answered then return tonumber(answered) end
local now = now_ms()
local groups = redis.call('HKEYS', base .. 'groups')
-- A requeued message is new: retention by age looks at it as at a pushed one (push-items.lua).
local horizon = age_horizon(queue_config(base))
local count = 0
for i = 1, #ARGV, 2 do
  local e = redis.call('XRANGE', base .. 'dlq', ARGV[i], ARGV[i])
  if #e > 0 then
    local m = e[1]
    local p = field(m, 'p')
    local txn = field(m, 't')
    local old = redis.call('HGET', base .. 'd:' .. p, txn)
    if old then
      local old_id = string.match(old, '^(%S+)')
      if redis.call('XDEL', base .. 's:' .. p, old_id) > 0 then forget_entry(base, p, old_id) end
    end
    local id = redis.call('XADD', base .. 's:' .. p, new_entry_id(),
      'r', record_of(ARGV[i + 1], txn, field(m, 'tr') or '', field(m, 'd') or 'null', field(m, 's') or ''))
    redis.call('HSET', base .. 'd:' .. p, txn, id .. ' ' .. ARGV[i + 1])
    if horizon > 0 then schedule_trim(base, p, now + horizon * 1000) end
    if not old then redis.call('HINCRBY', base .. 'stats', 'size', 1) end
    redis.call('XDEL', base .. 'dlq', ARGV[i])
    redis.call('HINCRBY', base .. 'stats', 'dlq', -1)
    for _, g in ipairs(groups) do
      redis.call('ZADD', base .. 'ready:' .. g, 'NX', now, p)
      redis.call('HINCRBY', base .. 'stats', 'pending:' .. g, 1)
    end
    count = count + 1
  end
end
redis.call('SET', requeue_memo, count, 'PX', ANSWER_MEMORY_MS)
return count
