--@include advance
--@include ckey
--@include completed-trim-at
--@include each-entry
--@include fail-attempt
--@include id-ms
--@include position
--@include release-lease
--@include reschedule
--@include schedule-trim

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
    each_entry('XRANGE', base .. 's:' .. p, '(' .. pos, st[2], math.huge, function(e)
      if redis.call('SISMEMBER', aset, e[1]) == 0 and redis.call('SISMEMBER', rset, e[1]) == 0 then
        if fail_attempt(base, p, g, e[1], 'Lease expired', cfg, now) and not dead_lettered then
          dead_lettered = id_ms(e[1])
        end
      end
    end)
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
