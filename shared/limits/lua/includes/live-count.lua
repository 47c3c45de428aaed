--[[
  live_count(base, kind, tenant, now): the tenant's slots of one kind held by nodes whose lease
  is live (`nodes:<kind>` score after now). Fields of nodes no longer in `nodes:<kind>` (gone
  for an hour, node-renew prunes them) are deleted; a node whose lease lapsed but is still
  listed counts again once it renews.
]]
local function live_count(base, kind, tenant, now)
  local counts = base .. 'n:' .. kind .. ':' .. tenant
  local fields = redis.call('HGETALL', counts)
  local used = 0
  for i = 1, #fields, 2 do
    local expiry = tonumber(redis.call('ZSCORE', base .. 'nodes:' .. kind, fields[i]))
    if not expiry then
      redis.call('HDEL', counts, fields[i])
    elseif expiry > now then
      used = used + tonumber(fields[i + 1])
    end
  end
  return used
end
