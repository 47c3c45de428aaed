--@include ckey
--@include position

-- Whether partition p holds an entry group g has not resolved.
local function has_unresolved(base, p, g)
  local pos = position(base, p, g)
  local aset = base .. 'a:' .. p .. ':' .. g
  local from = '(' .. pos
  -- Nothing resolved ahead of pos (the usual case): any entry after pos is unresolved.
  if redis.call('SCARD', aset) == 0 then
    return #redis.call('XRANGE', base .. 's:' .. p, from, '+', 'COUNT', 1) > 0
  end
  while true do
    local entries = redis.call('XRANGE', base .. 's:' .. p, from, '+', 'COUNT', 32)
    if #entries == 0 then return false end
    for _, e in ipairs(entries) do
      if redis.call('SISMEMBER', aset, e[1]) == 0 then return true end
      from = '(' .. e[1]
    end
  end
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
