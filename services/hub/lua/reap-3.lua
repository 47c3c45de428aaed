-- Claims the subscription entries of nodes whose lease expired, exactly once: the ZREM of the
-- node's lease succeeds for one caller only, and the entries go with it.
-- KEYS[1] sorted set: node id -> lease expiry (ms)
-- KEYS[2] hash: subscription id -> record (JSON)
-- KEYS[3] list: this call's claim (a key named by a fresh request id)
-- ARGV[1] now (ms)
-- ARGV[2] prefix of the per-node subscription id sets (same hash tag as the keys above)
-- ARGV[3] how long the claim is kept for a resend (ms)
-- Returns the claimed records.
-- Resend-safe: per request id. The claimed records are kept under KEYS[3]; a second run with
-- the same key returns them instead of claiming again (the first run already removed them, so
-- without it the caller would never announce their end).
if redis.call('EXISTS', KEYS[3]) == 1 then
  return redis.call('LRANGE', KEYS[3], 0, -1)
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 16)
local claimed = {}
for _, node in ipairs(expired) do
  if redis.call('ZREM', KEYS[1], node) == 1 then
    local setKey = ARGV[2] .. node
    for _, id in ipairs(redis.call('SMEMBERS', setKey)) do
      local record = redis.call('HGET', KEYS[2], id)
      if record then
        redis.call('HDEL', KEYS[2], id)
        table.insert(claimed, record)
      end
    end
    redis.call('DEL', setKey)
  end
end
if #claimed > 0 then
  redis.call('RPUSH', KEYS[3], unpack(claimed))
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
return claimed
