--@include ckey

-- Where group g starts on a partition it has never read (its subscription start).
local function group_start(base, g)
  return redis.call('HGET', base .. 'groups', g) or '0-0'
end

-- Group g's position on partition p: every entry up to it is resolved.
local function position(base, p, g)
  return redis.call('HGET', ckey(base, p, g), 'pos') or group_start(base, g)
end
