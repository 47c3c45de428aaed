--[[
  Applies one slot's prepared share of a committed transaction across slots (docs/broker-outbox.md,
  "Transactions across slots"): the committing node runs it at once, the relay of the
  coordinator's apply intent (any node) again; only the first run applies.
  KEYS[1..] bases: the base of each queue of the share, as given to txn-prepare-1.lua
  ARGV[1]   transactionId: the transaction's id
  ARGV[2]   memory: seconds the applied share's record (state, results) is kept
  Returns { 'OK', results, intents } (results as transaction-1.lua's; intents recorded by bridged
  queues, includes/outbox.lua), or { 'NONE' } when no prepared share is found (never prepared,
  aborted, or applied so long ago its record expired).
  Resend-safe: per transaction id: the record moves to 'applied' with the results in the same
  run, and a second run answers those results without applying anything again.
]]
--@include clock
--@include transaction-apply
--@include transaction-read

local now = now_ms()
local record = KEYS[1] .. 'txp:' .. ARGV[1]
local state = redis.call('HGET', record, 'state')
if state == 'applied' then return { 'OK', cjson.decode(redis.call('HGET', record, 'out')), 0 } end
if state ~= 'prepared' then return { 'NONE' } end

local ops = read_transaction_ops(cjson.decode(redis.call('HGET', record, 'ops')), 1)
local out = apply_transaction_ops(ops, now, true)
local held = cjson.decode(redis.call('HGET', record, 'held'))
for i = 1, #held, 2 do redis.call('HINCRBY', KEYS[held[i]] .. 'stats', 'txpush', -held[i + 1]) end
redis.call('HSET', record, 'state', 'applied', 'out', cjson.encode(out))
redis.call('HDEL', record, 'ops', 'held')
redis.call('EXPIRE', record, ARGV[2])
return { 'OK', out, outbox_written }
