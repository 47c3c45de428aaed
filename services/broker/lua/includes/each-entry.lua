--@include read-sized

-- Calls each(e) on the entries of `range_key` between `from` and `to` (XRANGE's bounds, or
-- XREVRANGE's with cmd 'XREVRANGE'), in order, `want` at most, read a few at a time while they
-- are large (read-sized.lua); stops at the first entry for which each returns false. Returns
-- the number of entries passed to each, and whether the range may go on past them (stopped
-- early, or `want` reached before the range's end was seen).
local function each_entry(cmd, range_key, from, to, want, each)
  local n = 0
  while n < want do
    local entries, asked = read_sized(cmd, range_key, from, to, want - n)
    for _, e in ipairs(entries) do
      n = n + 1
      if each(e) == false then return n, true end
    end
    if #entries < asked then return n, false end
    from = '(' .. entries[#entries][1]
  end
  return n, true
end
