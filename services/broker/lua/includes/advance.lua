--@include ckey
--@include each-entry
--@include position

-- Moves pos over ids already resolved, so the resolved set stays small.
local function advance(base, p, g)
  local ck = ckey(base, p, g)
  local aset = base .. 'a:' .. p .. ':' .. g
  local pending = redis.call('SCARD', aset)
  if pending == 0 then return end
  local pos = position(base, p, g)
  local moved = false
  -- pos can move past at most |resolved| entries: read no more than that (in-order acks: 1).
  each_entry('XRANGE', base .. 's:' .. p, '(' .. pos, '+', pending, function(e)
    if redis.call('SREM', aset, e[1]) == 0 then return false end
    pos = e[1]; moved = true
    redis.call('HDEL', base .. 'rc:' .. p .. ':' .. g, e[1])
  end)
  if moved then redis.call('HSET', ck, 'pos', pos) end
end
