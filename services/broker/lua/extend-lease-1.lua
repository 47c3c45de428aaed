--[[
  Extends every (partition, group) lease held under one leaseId; never shortens.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   leaseId: the lease to extend
  ARGV[2]   seconds: the lease's new time from now
  Returns { 1, expiresAt } or { 0, error }.
  Resend-safe: naturally; a lease is never shortened, so a second run moves the expiry to the same
  target again (a few ms later at most) and answers success.
]]
--@include drain-when-full
--@include ckey
--@include clock
--@include fmt

local base, lease = KEYS[1], ARGV[1]
local seconds = tonumber(ARGV[2])
local now = now_ms()
local lkey = base .. 'lease:' .. lease
local members = redis.call('SMEMBERS', lkey)
if #members == 0 then return { 0, 'Lease not found' } end
local earliest = nil
local expired = false
for _, m in ipairs(members) do
  local p, g = string.match(m, '^(.-)\n(.*)$')
  local ck = ckey(base, p, g)
  local st = redis.call('HMGET', ck, 'lease', 'exp')
  if st[1] == lease then
    local exp = tonumber(st[2] or '0')
    if exp <= now then
      expired = true
    else
      local target = now + seconds * 1000
      if target > exp then
        exp = target
        redis.call('HSET', ck, 'exp', fmt(exp))
        redis.call('ZADD', base .. 'leases', exp, m)
        redis.call('ZADD', base .. 'ready:' .. g, 'XX', exp, p)
      end
      if not earliest or exp < earliest then earliest = exp end
    end
  end
end
if not earliest then
  if expired then return { 0, 'Lease already expired' } end
  return { 0, 'Lease not active' }
end
redis.call('PEXPIREAT', lkey, earliest + 60000)
return { 1, fmt(earliest) }
