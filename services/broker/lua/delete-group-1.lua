--[[
  Removes a consumer group's state from one queue.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   group: the group (URI-encoded)
  Returns 1 if the group existed in this queue, else 0.
  Resend-safe: naturally for its effects (the group is gone either way); a second run answers 0,
  so the caller also checks existence before the call (redis/groups.ts deleteGroup).
]]
--@include drain-when-full
--@include age-horizon
--@include ckey
--@include clock
--@include completed-trim-at
--@include queue-config
--@include release-lease
--@include schedule-trim

local base, g = KEYS[1], ARGV[1]
local existed = redis.call('HDEL', base .. 'groups', g)
redis.call('SREM', base .. 'unreg', g)
-- What only this group had not consumed may now be deletable: with any retention rule, every
-- partition is looked at again now (a rare operation; retention reschedules each exactly).
local cfg = queue_config(base)
local retained = age_horizon(cfg) > 0 or completed_trim_at(cfg, 0) ~= nil
local now = now_ms()
for _, p in ipairs(redis.call('HKEYS', base .. 'parts')) do
  if retained then schedule_trim(base, p, now) end
  local lease = redis.call('HGET', ckey(base, p, g), 'lease')
  if lease then release_lease(base, p, g, lease) end
  redis.call('DEL', ckey(base, p, g), base .. 'a:' .. p .. ':' .. g, base .. 'rc:' .. p .. ':' .. g,
    base .. 'r:' .. p .. ':' .. g)
  redis.call('HDEL', base .. 'heads', p .. '\n' .. g)
end
redis.call('DEL', base .. 'ready:' .. g)
redis.call('HDEL', base .. 'stats', 'resolved:' .. g, 'pending:' .. g)
return existed
