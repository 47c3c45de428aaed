--[[
  Removes relayed intents from a queue's outbox (src/redis/outbox.ts): each was applied by its
  destination, or refused for good and kept in the outbox's dead letters (obd). Frees the
  relay's lock once the outbox is empty.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   relay: the relay's id
  ARGV[2]   count: how many of ARGV[3..] are relayed intents' ids; the rest are refused ones,
            each as id, reason
  Returns the number of intents left in the outbox.
  Resend-safe: naturally; XDEL of an id already deleted deletes nothing, and a refused intent
  is dead-lettered only while it is still in the outbox.
]]
--@include drain-when-full
--@include entry-id

local outbox = KEYS[1] .. 'ob'
local relayed = tonumber(ARGV[2])
if relayed > 0 then redis.call('XDEL', outbox, unpack(ARGV, 3, 2 + relayed)) end
for i = 3 + relayed, #ARGV, 2 do
  local e = redis.call('XRANGE', outbox, ARGV[i], ARGV[i])[1]
  if e then
    local fields = e[2]
    fields[#fields + 1] = 'reason'
    fields[#fields + 1] = ARGV[i + 1]
    redis.call('XADD', KEYS[1] .. 'obd', 'MAXLEN', '~', 10000, new_entry_id(), unpack(fields))
    redis.call('XDEL', outbox, ARGV[i])
  end
end
local left = redis.call('XLEN', outbox)
if left == 0 and redis.call('GET', KEYS[1] .. 'obl') == ARGV[1] then redis.call('DEL', KEYS[1] .. 'obl') end
return left
