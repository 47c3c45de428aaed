--[[
  Expires the leases of one queue whose time has passed (each unanswered message counts one
  failed attempt; past retryLimit it is dead-lettered).
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   limit: leases handled per call
  Returns { expired, { group... } } (groups with a partition made poppable again).
  Resend-safe: naturally; a lease expired by the first run is no longer held, so a second run
  counts no attempt for it.
]]
--@include drain-when-full
--@include ckey
--@include clock
--@include expire-lease
--@include queue-config

local base = KEYS[1]
local now = now_ms()
local cfg = queue_config(base)
local due = redis.call('ZRANGEBYSCORE', base .. 'leases', '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local expired = 0
local groups = {}
for _, m in ipairs(due) do
  local p, g = string.match(m, '^(.-)\n(.*)$')
  local exp = tonumber(redis.call('HGET', ckey(base, p, g), 'exp') or '0')
  if exp <= now then
    expired = expired + expire_lease(base, p, g, cfg, now)
    groups[#groups + 1] = g
    redis.call('ZREM', base .. 'leases', m)
  end
end
return { expired, groups }
