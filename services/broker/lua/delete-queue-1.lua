--[[
  Deletes a queue: its messages, partitions, groups, leases, dead letters and counters.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  Returns the partition ids that existed (so the caller can drop them from the global index).
  Resend-safe: naturally for its effects; a second run returns no partition ids, so the caller
  also reads them before the call (redis/catalog.ts delete) to drop the first run's from the
  index.
]]
--@include drain-when-full
--@include ckey

local base = KEYS[1]
-- Registered groups and those acks gave state without registering them.
local groups = redis.call('HKEYS', base .. 'groups')
for _, g in ipairs(redis.call('SMEMBERS', base .. 'unreg')) do
  if redis.call('HEXISTS', base .. 'groups', g) == 0 then groups[#groups + 1] = g end
end
local parts = redis.call('HGETALL', base .. 'parts')
local ids = {}
for i = 1, #parts, 2 do
  local p = parts[i]
  ids[#ids + 1] = parts[i + 1]
  redis.call('DEL', base .. 's:' .. p, base .. 'd:' .. p)
  for _, g in ipairs(groups) do
    local lease = redis.call('HGET', ckey(base, p, g), 'lease')
    if lease then redis.call('DEL', base .. 'lease:' .. lease) end
    redis.call('DEL', ckey(base, p, g), base .. 'a:' .. p .. ':' .. g, base .. 'rc:' .. p .. ':' .. g,
      base .. 'r:' .. p .. ':' .. g)
  end
end
for _, g in ipairs(groups) do redis.call('DEL', base .. 'ready:' .. g) end
redis.call('DEL', base .. 'cfg', base .. 'parts', base .. 'pids', base .. 'groups', base .. 'leases',
  base .. 'dlq', base .. 'trim', base .. 'stats', base .. 'unreg', base .. 'heads')
return ids
