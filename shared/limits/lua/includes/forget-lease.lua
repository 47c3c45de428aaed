--[[
  forget_lease(base, tenant, leaseId): takes an in-flight lease out of its tenant's budget and
  drops its indexes (`lg`, the `lp` entries still pointing at it, its acked set). Returns the
  weight it held.
]]
local function forget_lease(base, tenant, lease)
  local weights = base .. 'lw:' .. tenant
  local weight = tonumber(redis.call('HGET', weights, lease)) or 0
  if weight ~= 0 then redis.call('HINCRBY', weights, '~total', -weight) end
  redis.call('HDEL', weights, lease)
  redis.call('ZREM', base .. 'lz:' .. tenant, lease)
  local layout = redis.call('HGET', base .. 'lg', lease)
  if layout then
    local first = true
    for pair in string.gmatch(layout, '[^\t]+') do
      if first then
        first = false
      elseif redis.call('HGET', base .. 'lp', pair) == lease then
        redis.call('HDEL', base .. 'lp', pair)
      end
    end
    redis.call('HDEL', base .. 'lg', lease)
  end
  redis.call('DEL', base .. 'la:' .. lease)
  return weight
end
