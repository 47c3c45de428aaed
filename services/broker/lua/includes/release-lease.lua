--@include ckey
--@include clock

-- Ends group g's lease on partition p. Entries the lease kept from retention by age (a lease
-- holds what follows its group's position) may be deletable now: a partition retention looks
-- at later is brought forward to now (XX: one it has nothing scheduled for stays so).
local function release_lease(base, p, g, lease)
  redis.call('HDEL', ckey(base, p, g), 'lease', 'exp', 'upto', 'n')
  redis.call('DEL', base .. 'r:' .. p .. ':' .. g)
  redis.call('ZREM', base .. 'leases', p .. '\n' .. g)
  if lease then redis.call('SREM', base .. 'lease:' .. lease, p .. '\n' .. g) end
  redis.call('ZADD', base .. 'trim', 'XX', 'LT', now_ms(), p)
end
