-- Claims the subscription entries of nodes whose lease expired, exactly once: the ZREM of the
-- node's lease succeeds for one caller only, and the entries go with it.
-- KEYS[1] sorted set: node id -> lease expiry (ms)
-- KEYS[2] hash: subscription id -> record (JSON)
-- ARGV[1] now (ms)
-- ARGV[2] prefix of the per-node subscription id sets (same hash tag as the keys above)
-- Returns the claimed records.
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
return claimed
