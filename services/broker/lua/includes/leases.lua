--[[
  Leases: release, rescheduling after a lease ends, failed attempts (dead-lettered past
  retryLimit) and expiry (a lease expiry is an attempt; one that dead-letters schedules a trim,
  trim.lua).
  Part of lua/includes/broker.lua (included from there, after what it uses).
]]

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

-- Counts one failed attempt for a message; dead-letters it past retryLimit.
-- Returns true when dead-lettered.
local function fail_attempt(base, p, g, id, err, cfg, now)
  local attempts = redis.call('HINCRBY', base .. 'rc:' .. p .. ':' .. g, id, 1)
  if attempts > cfg.retryLimit then
    if cfg.deadLetterQueue then dead_letter(base, p, g, id, err, attempts, now) end
    resolve(base, p, g, id)
    return true
  end
  if cfg.retryDelay > 0 then
    redis.call('HSET', ckey(base, p, g), 'nb', fmt(now + cfg.retryDelay))
  end
  return false
end

-- An expired lease: every message of the batch left unanswered counts one failed attempt
-- (docs/broker-api.md: a lease expiry is an attempt), then the partition is rescheduled.
local function expire_lease(base, p, g, cfg, now)
  local ck = ckey(base, p, g)
  local st = redis.call('HMGET', ck, 'lease', 'upto')
  if not st[1] then return 0 end
  local pos = position(base, p, g)
  local aset = base .. 'a:' .. p .. ':' .. g
  local rset = base .. 'r:' .. p .. ':' .. g
  local dead_lettered = nil
  if st[2] then
    local entries = redis.call('XRANGE', base .. 's:' .. p, '(' .. pos, st[2])
    for _, e in ipairs(entries) do
      if redis.call('SISMEMBER', aset, e[1]) == 0 and redis.call('SISMEMBER', rset, e[1]) == 0 then
        if fail_attempt(base, p, g, e[1], 'Lease expired', cfg, now) and not dead_lettered then
          dead_lettered = id_ms(e[1])
        end
      end
    end
  end
  redis.call('HINCRBY', base .. 'stats', 'expiries', 1)
  release_lease(base, p, g, st[1])
  advance(base, p, g)
  reschedule(base, p, g, now)
  -- A message resolved by the expiry (dead-lettered or dropped) is trimmed as an acked one is:
  -- without this it counted toward maxSize for good (issue #11).
  if dead_lettered then
    local trim_at = completed_trim_at(cfg, dead_lettered)
    if trim_at then schedule_trim(base, p, trim_at) end
  end
  return 1
end
