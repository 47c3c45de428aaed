--[[
  Prepares one slot's share of a transaction across Redis Cluster slots (docs/broker-outbox.md,
  "Transactions across slots"): checks it as transaction-1.lua would, then holds what the check
  relied on until the transaction is applied or aborted: room in each queue for its new messages
  (stats txpush, counted by every maxSize check) and the leases its acks name (kept from expiring
  before ARGV[2]). Writes nothing else: the share is applied by txn-apply-1.lua once the
  coordinator committed, or released by txn-abort-1.lua.
  KEYS[1..] bases: the base of each queue of this share, once each (one slot); the record of the
            share is txp:<transactionId> under KEYS[1]
  ARGV[1]   transactionId: the transaction's id
  ARGV[2]   pin: time (ms) until which the acks' leases are kept from expiring
  ARGV[3..] operations: as includes/transaction-read.lua reads them (key indexes into KEYS)
  Returns { 'OK' }, or the refusal of the check { 'FAIL', index, error } / { 'CLEAR', index }
  (nothing held), or { 'FAIL', -1, error } when the transaction was already aborted.
  Resend-safe: per transaction id: a share already prepared (or applied) answers OK again
  without holding anything twice; one aborted stays aborted.
]]
--@include ckey
--@include clock
--@include fmt
--@include transaction-check
--@include transaction-read

local now = now_ms()
local txid, pin = ARGV[1], tonumber(ARGV[2])
local record = KEYS[1] .. 'txp:' .. txid
local state = redis.call('HGET', record, 'state')
if state == 'prepared' or state == 'applied' then return { 'OK' } end
if state == 'aborted' then return { 'FAIL', -1, 'Transaction timed out before it committed (nothing applied)' } end

local ops, refused = read_transaction_ops(ARGV, 3)
if not ops then return refused end
local fresh
fresh, refused = check_transaction_ops(ops, now)
if not fresh then return refused end

-- Room for the new messages, by key index (released by the apply or the abort).
local held = {}
for k = 1, #KEYS do
  local n = fresh[KEYS[k]]
  if n then
    redis.call('HINCRBY', KEYS[k] .. 'stats', 'txpush', n)
    held[#held + 1] = k
    held[#held + 1] = n
  end
end
-- The acks' leases live at least until the pin (an extension never shortens them either).
for _, op in ipairs(ops) do
  if op.kind == 'ack' and op.lease ~= '' then
    local ck = ckey(op.base, op.p, op.g)
    local st = redis.call('HMGET', ck, 'lease', 'exp')
    if st[1] == op.lease and tonumber(st[2] or '0') < pin then
      redis.call('HSET', ck, 'exp', fmt(pin))
      redis.call('ZADD', op.base .. 'leases', pin, op.p .. '\n' .. op.g)
      redis.call('ZADD', op.base .. 'ready:' .. op.g, 'XX', pin, op.p)
      redis.call('PEXPIREAT', op.base .. 'lease:' .. op.lease, pin + 60000)
    end
  end
end
local stored = {}
for i = 3, #ARGV do stored[#stored + 1] = ARGV[i] end
redis.call('HSET', record, 'state', 'prepared', 'ops', cjson.encode(stored), 'held', cjson.encode(held))
return { 'OK' }
