--[[
  Claims the subscription entries of one node whose lease expired, exactly once: the ZREM of the
  node's lease succeeds for one caller only, and the entries go with it. The caller lists the
  expired nodes (ZRANGEBYSCORE on KEYS[1]) and calls this once per node, so every key is declared.
  KEYS[1]   leases: sorted set node id -> lease expiry (ms)
  KEYS[2]   records: hash subscription id -> record (JSON)
  KEYS[3]   claim: list, this call's claim (a key named by a fresh request id)
  KEYS[4]   subscriptions: set, the expired node's subscription ids
  ARGV[1]   nodeId: the expired node's id
  ARGV[2]   now: now (ms): a lease renewed since the caller listed it is left alone
  ARGV[3]   claimMemory: how long the claim is kept for a resend (ms)
  Returns the claimed records.
  Resend-safe: per request id. The claimed records are kept under KEYS[3]; a second run with the
  same key returns them instead of claiming again (the first run already removed them, so without
  it the caller would never announce their end).
]]
if redis.call('EXISTS', KEYS[3]) == 1 then
  return redis.call('LRANGE', KEYS[3], 0, -1)
end
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expiry or tonumber(expiry) > tonumber(ARGV[2]) then
  return {}
end
redis.call('ZREM', KEYS[1], ARGV[1])
local claimed = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  local record = redis.call('HGET', KEYS[2], id)
  if record then
    redis.call('HDEL', KEYS[2], id)
    table.insert(claimed, record)
  end
end
redis.call('DEL', KEYS[4])
if #claimed > 0 then
  redis.call('RPUSH', KEYS[3], unpack(claimed))
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
return claimed
