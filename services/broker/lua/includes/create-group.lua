--@include ckey
--@include unresolved-in

-- Registers group g with its subscription start (HSETNX: an existing group keeps its own) and
-- counts its backlog, pending:<g>. Returns true when the group is new.
local function create_group(base, g, start)
  -- The first group of a queue: every group is counted from its creation on (see ensure_backlog).
  if redis.call('HLEN', base .. 'groups') == 0 then redis.call('HSETNX', base .. 'stats', 'backlog', '1') end
  if redis.call('HSETNX', base .. 'groups', g, start) == 0 then return false end
  redis.call('SREM', base .. 'unreg', g)
  -- A partition where acks without a lease already resolved messages for g (an ack needs no
  -- registered group) is counted from that state, not from the start (issue #11, differential test).
  local n = 0
  for _, p in ipairs(redis.call('HKEYS', base .. 'parts')) do
    local aset = base .. 'a:' .. p .. ':' .. g
    if redis.call('EXISTS', ckey(base, p, g), aset) > 0 then
      -- forget_entry visits registered groups only: an entry deleted or requeued while g was not
      -- one is still in its resolved set, and would be subtracted from what g has not resolved.
      for _, id in ipairs(redis.call('SMEMBERS', aset)) do
        if #redis.call('XRANGE', base .. 's:' .. p, id, id) == 0 then redis.call('SREM', aset, id) end
      end
      n = n + unresolved_in(base, p, g)
    elseif start == '0-0' then
      n = n + redis.call('XLEN', base .. 's:' .. p)
    else
      n = n + count_after(base, p, start)
    end
  end
  redis.call('HSET', base .. 'stats', 'pending:' .. g, n)
  return true
end
