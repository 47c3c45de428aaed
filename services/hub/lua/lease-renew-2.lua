-- Renews this node's lease on its active subscription entries.
-- KEYS[1] sorted set: node id -> lease expiry (ms)
-- KEYS[2] this node's set of subscription ids
-- ARGV[1] node id
-- ARGV[2] lease expiry (ms)
-- Returns 1 when the lease was still held, 0 when it had been reaped (the node must re-register
-- its entries: another node already published their `active: false` events).
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
if held then
  return 1
end
return 0
