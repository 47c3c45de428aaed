--@include forget-lease
--[[
  prune_leases(base, tenant, now): ends the tenant's in-flight leases whose expiry has passed
  (their messages are deliverable again, so their slots are free).
]]
local function prune_leases(base, tenant, now)
  local expired = redis.call('ZRANGEBYSCORE', base .. 'lz:' .. tenant, '-inf', now)
  for _, lease in ipairs(expired) do
    forget_lease(base, tenant, lease)
  end
end
