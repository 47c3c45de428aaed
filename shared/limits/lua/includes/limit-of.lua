--[[
  limit_of(base, kind, tenant, default): a tenant's limit of one kind, its override in the
  `cfg` hash (field `<kind>\n<tenant>`, set by the admin route) or else the node's default; a
  negative limit is no limit.
]]
local function limit_of(base, kind, tenant, default)
  local override = redis.call('HGET', base .. 'cfg', kind .. '\n' .. tenant)
  if override then return tonumber(override) end
  return default
end
