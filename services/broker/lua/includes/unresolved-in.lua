--@include each-entry
--@include position

-- Number of entries of partition p after position `after` (reads them: for rare operations,
-- group creation and seek, never on the push/pop/ack path).
local function count_after(base, p, after)
  return (each_entry('XRANGE', base .. 's:' .. p, '(' .. after, '+', math.huge, function() end))
end

-- Entries of partition p group g has not resolved: after its position, not in its resolved set.
local function unresolved_in(base, p, g)
  return count_after(base, p, position(base, p, g)) - redis.call('SCARD', base .. 'a:' .. p .. ':' .. g)
end
