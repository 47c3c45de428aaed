--[[
  Moves a consumer group's position in one queue (all partitions, or one) to the end or to a
  timestamp; clears its leases, resolved sets and retry counts there (replay or skip), and has
  retention look at the moved partitions.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   group: the consumer group (URI-encoded)
  ARGV[2]   partition: the partition (URI-encoded), '' for every partition
  ARGV[3]   target: 'end' or a position ('<ms-1>-<max>' = from that time on)
  Returns the number of partitions moved.
  The group's pending count: a seek of every partition sets it to what is left after the new
  positions (the old backlog need not be counted); a seek of one partition moves it by (backlog
  after) - (backlog before) there. Counting reads the stream on the nearer side of the position
  only, and nothing for a seek to the end or to before every message (count_after).
  Resend-safe: naturally; a second run sets the same positions again (for 'end': the end, which
  includes only messages pushed in between) and clears the same state; the group's pending count
  is set to the same count again, or moves by 0 the second time; the trim schedule (ZADD LT now)
  is already due.
]]
--@include drain-when-full
--@include ckey
--@include clock
--@include create-group
--@include release-lease
--@include reschedule
--@include schedule-trim
--@include unresolved-in

local base, g, only, target = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local now = now_ms()
if create_group(base, g, '0-0') then
  -- A new group, as at its first pop: every existing partition may hold work for it (a seek of
  -- one partition, or of none that exists, left the others out of its ready set for good).
  for _, p in ipairs(redis.call('HKEYS', base .. 'parts')) do
    redis.call('ZADD', base .. 'ready:' .. g, 'NX', now, p)
  end
end
local parts
if only ~= '' then
  if redis.call('HEXISTS', base .. 'parts', only) == 0 then return 0 end
  parts = { only }
else
  parts = redis.call('HKEYS', base .. 'parts')
end
-- The group's backlog (maxSize) after the move: every partition's is counted anew; one
-- partition's changes the count by what the move skips or replays there.
local left = 0
for _, p in ipairs(parts) do
  local pos = target
  if target == 'end' then
    local last = redis.call('XREVRANGE', base .. 's:' .. p, '+', '-', 'COUNT', 1)
    if #last > 0 then pos = last[1][1] else pos = '0-0' end
  end
  local lease = redis.call('HGET', ckey(base, p, g), 'lease')
  if lease then release_lease(base, p, g, lease) end
  local before = 0
  if only ~= '' then before = unresolved_in(base, p, g) end
  redis.call('DEL', ckey(base, p, g), base .. 'a:' .. p .. ':' .. g, base .. 'rc:' .. p .. ':' .. g)
  redis.call('HSET', ckey(base, p, g), 'pos', pos)
  -- The entry stats-1.lua kept as next after this position may be gone since (retention).
  redis.call('HDEL', base .. 'heads', p .. '\n' .. g)
  if target ~= 'end' then left = left + count_after(base, p, pos) end
  left = left - before
  reschedule(base, p, g, now)
  -- What the move resolved or reopened may be due for retention now (ttl, maxWaitTimeSeconds,
  -- completedRetentionSeconds): retention looks again.
  schedule_trim(base, p, now)
end
if only ~= '' then
  redis.call('HINCRBY', base .. 'stats', 'pending:' .. g, left)
else
  redis.call('HSET', base .. 'stats', 'pending:' .. g, left)
end
return #parts
