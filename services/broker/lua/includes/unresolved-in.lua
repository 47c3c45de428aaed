--@include each-entry
--@include id-cmp
--@include id-ms
--@include position

-- Number of entries of partition p after position `after`, for rare operations (group
-- creation, seek), never on the push/pop/ack path. Redis has no count of a stream range, so
-- this reads entries, a few at a time: none when `after` is before the first entry (all of
-- them: XLEN) or at or past the last (none); otherwise those on the side of `after` nearer in
-- time, after (counted) or up to it (XLEN less them). A seek to the end or to a time before
-- every message, on a backlog of millions, reads two entries instead of all of them.
local function count_after(base, p, after)
  local n = redis.call('XLEN', base .. 's:' .. p)
  if n == 0 then return 0 end
  local first = redis.call('XRANGE', base .. 's:' .. p, '-', '+', 'COUNT', 1)[1][1]
  if id_cmp(after, first) < 0 then return n end
  local last = redis.call('XREVRANGE', base .. 's:' .. p, '+', '-', 'COUNT', 1)[1][1]
  if id_cmp(after, last) >= 0 then return 0 end
  if id_ms(after) - id_ms(first) < id_ms(last) - id_ms(after) then
    return n - (each_entry('XRANGE', base .. 's:' .. p, '-', after, math.huge, function() end))
  end
  return (each_entry('XRANGE', base .. 's:' .. p, '(' .. after, '+', math.huge, function() end))
end

-- Entries of partition p group g has not resolved: after its position, not in its resolved set.
local function unresolved_in(base, p, g)
  return count_after(base, p, position(base, p, g)) - redis.call('SCARD', base .. 'a:' .. p .. ':' .. g)
end
