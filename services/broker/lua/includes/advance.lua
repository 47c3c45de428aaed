--@include ckey
--@include position

-- Moves pos over ids already resolved, so the resolved set stays small.
local function advance(base, p, g)
  local ck = ckey(base, p, g)
  local aset = base .. 'a:' .. p .. ':' .. g
  local pending = redis.call('SCARD', aset)
  if pending == 0 then return end
  local pos = position(base, p, g)
  local moved = false
  while true do
    -- pos can move past at most |resolved| entries: read no more than that (in-order acks: 1).
    local entries = redis.call('XRANGE', base .. 's:' .. p, '(' .. pos, '+', 'COUNT', math.min(pending, 64))
    if #entries == 0 then break end
    local stop = false
    for _, e in ipairs(entries) do
      if redis.call('SREM', aset, e[1]) == 1 then
        pos = e[1]; moved = true
        redis.call('HDEL', base .. 'rc:' .. p .. ':' .. g, e[1])
      else
        stop = true
        break
      end
    end
    if stop then break end
  end
  if moved then redis.call('HSET', ck, 'pos', pos) end
end
