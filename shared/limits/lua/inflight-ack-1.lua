--[[
  Frees the in-flight slot of each acknowledged message (any status: completed, failed, retry,
  dlq all end its lease), found through the lease its (partition, group) points at; a lease
  whose every message is acknowledged is forgotten.
  KEYS[1]   base: <prefix>{limits}: (every key the script touches is this text plus a suffix)
  ARGV[1..] triples: partitionId, encoded group, transactionId of each acknowledged message (open)
  Returns 1 (the same on a second run: what was freed is in the counts, not in the answer).
  Resend-safe: naturally. Each lease keeps the transaction ids already freed (la:<leaseId>,
  until a minute after the lease's expiry); a second run finds them there and frees nothing.
]]
--@include forget-lease
--@include tenant-of-lease
local base = KEYS[1]
for i = 1, #ARGV, 3 do
  local lease = redis.call('HGET', base .. 'lp', ARGV[i] .. '\n' .. ARGV[i + 1])
  local tenant = lease and tenant_of_lease(base, lease)
  if tenant then
    local acked = base .. 'la:' .. lease
    local weights = base .. 'lw:' .. tenant
    if redis.call('SADD', acked, ARGV[i + 2]) == 1 then
      local expiry = tonumber(redis.call('ZSCORE', base .. 'lz:' .. tenant, lease)) or 0
      redis.call('PEXPIREAT', acked, expiry + 60000)
      local left = redis.call('HINCRBY', weights, lease, -1)
      redis.call('HINCRBY', weights, '~total', -1)
      if left <= 0 then forget_lease(base, tenant, lease) end
    end
  end
end
return 1
