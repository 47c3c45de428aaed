-- The consumer state of group g on partition p (key layout: lua/README.md).
local function ckey(base, p, g) return base .. 'c:' .. p .. ':' .. g end
