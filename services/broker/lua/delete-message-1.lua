--[[
  Deletes one message (by partition and transactionId) from a queue.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   partition: the message's partition (URI-encoded)
  ARGV[2]   transactionId: the message's transactionId
  Returns 1 when deleted, 0 when not found.
  Resend-safe: naturally for its effects (the message is gone either way); a second run answers 0,
  so the caller also checks existence before the call (redis/messages.ts deleteMessage).
]]
--@include drain-when-full
--@include forget-entry

local base, p, txn = KEYS[1], ARGV[1], ARGV[2]
local d = redis.call('HGET', base .. 'd:' .. p, txn)
if not d then return 0 end
local id = string.match(d, '^(%S+)')
redis.call('HDEL', base .. 'd:' .. p, txn)
local n = redis.call('XDEL', base .. 's:' .. p, id)
if n > 0 then
  redis.call('HINCRBY', base .. 'stats', 'size', -n)
  forget_entry(base, p, id)
end
return 1
