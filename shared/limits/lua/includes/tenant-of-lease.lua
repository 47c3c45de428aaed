--[[
  tenant_of_lease(base, leaseId): the tenant an in-flight lease counts against (the first
  tab-separated field of its `lg` entry), or nil when the lease is not counted.
]]
local function tenant_of_lease(base, lease)
  local layout = redis.call('HGET', base .. 'lg', lease)
  if not layout then return nil end
  return string.match(layout, '^[^\t]*')
end
