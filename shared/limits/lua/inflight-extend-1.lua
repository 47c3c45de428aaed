--[[
  Moves an in-flight lease's expiry with the lease it mirrors (lease extension); never shortens.
  KEYS[1]   base: <prefix>{limits}: (every key the script touches is this text plus a suffix)
  ARGV[1]   leaseId: the extended lease
  ARGV[2]   expiresAt: its new expiry (ms)
  Returns 1 when the lease is counted (and now held until expiresAt), else 0.
  Resend-safe: naturally. A second run sets the same expiry again.
]]
--@include tenant-of-lease
local base = KEYS[1]
local tenant = tenant_of_lease(base, ARGV[1])
if not tenant then return 0 end
redis.call('ZADD', base .. 'lz:' .. tenant, 'GT', 'XX', ARGV[2], ARGV[1])
return 1
