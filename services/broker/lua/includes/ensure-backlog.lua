--@include unresolved-in

--[[
  The pending:<g> counters are exact from a group's creation on (every script that resolves,
  deletes or moves a position keeps them); `backlog` says every group of the queue was counted.
  A queue whose groups were created by an earlier release has no such mark: its groups are
  counted once, here, from the streams (idempotent: a resend counts the same).
]]
local function ensure_backlog(base, groups)
  if #groups == 0 or redis.call('HSETNX', base .. 'stats', 'backlog', '1') == 0 then return end
  local parts = redis.call('HKEYS', base .. 'parts')
  for _, g in ipairs(groups) do
    local n = 0
    for _, p in ipairs(parts) do n = n + unresolved_in(base, p, g) end
    redis.call('HSET', base .. 'stats', 'pending:' .. g, n)
  end
end
