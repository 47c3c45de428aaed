--@include ckey
--@include each-entry
--@include position

-- Whether partition p holds an entry group g has not resolved.
local function has_unresolved(base, p, g)
  local pos = position(base, p, g)
  local aset = base .. 'a:' .. p .. ':' .. g
  local from = '(' .. pos
  -- Nothing resolved ahead of pos (the usual case): any entry after pos is unresolved.
  local resolved = redis.call('SCARD', aset)
  if resolved == 0 then
    return #redis.call('XRANGE', base .. 's:' .. p, from, '+', 'COUNT', 1) > 0
  end
  -- Of the first resolved + 1 entries after pos, one at least is not resolved.
  local found = false
  each_entry('XRANGE', base .. 's:' .. p, from, '+', resolved + 1, function(e)
    found = redis.call('SISMEMBER', aset, e[1]) == 0
    return not found
  end)
  return found
end

-- After a lease ends: schedule the partition for group g, or drop it from the ready set.
local function reschedule(base, p, g, now)
  local nb = tonumber(redis.call('HGET', ckey(base, p, g), 'nb') or '0')
  if has_unresolved(base, p, g) then
    local at = now
    if nb > now then at = nb end
    redis.call('ZADD', base .. 'ready:' .. g, at, p)
  else
    redis.call('ZREM', base .. 'ready:' .. g, p)
  end
end
