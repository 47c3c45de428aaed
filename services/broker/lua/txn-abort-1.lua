--[[
  Aborts one slot's share of a transaction across slots that did not commit (docs/broker-outbox.md,
  "Transactions across slots"): gives back the room its prepare held and remembers the abort, so
  a prepare arriving late (a resent script) refuses. Leases the prepare extended stay extended.
  KEYS[1..] bases: the base of each queue of the share, as given to txn-prepare-1.lua
  ARGV[1]   transactionId: the transaction's id
  ARGV[2]   memory: seconds the aborted share's record is kept (a prepare resent later refuses)
  Returns the share's state before the call: 'prepared', 'aborted', 'applied' (left as it is: a
  committed share is never undone) or 'none'.
  Resend-safe: naturally; a second run finds the share aborted and changes nothing.
]]
local record = KEYS[1] .. 'txp:' .. ARGV[1]
local state = redis.call('HGET', record, 'state')
if state == 'applied' then return state end
if state == 'prepared' then
  local held = cjson.decode(redis.call('HGET', record, 'held'))
  for i = 1, #held, 2 do redis.call('HINCRBY', KEYS[held[i]] .. 'stats', 'txpush', -held[i + 1]) end
end
redis.call('HSET', record, 'state', 'aborted')
redis.call('HDEL', record, 'ops', 'held')
redis.call('EXPIRE', record, ARGV[2])
return state or 'none'
