--@include position

-- Number of entries of partition p after position `after` (reads them: for rare operations,
-- group creation and seek, never on the push/pop/ack path).
local function count_after(base, p, after)
  local n = 0
  local from = '(' .. after
  while true do
    local e = redis.call('XRANGE', base .. 's:' .. p, from, '+', 'COUNT', 1000)
    n = n + #e
    if #e < 1000 then return n end
    from = '(' .. e[#e][1]
  end
end

-- Entries of partition p group g has not resolved: after its position, not in its resolved set.
local function unresolved_in(base, p, g)
  return count_after(base, p, position(base, p, g)) - redis.call('SCARD', base .. 'a:' .. p .. ':' .. g)
end
