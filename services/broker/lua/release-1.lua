--[[
  Gives back a lease without counting an attempt (the pop's client went away before the
  response was written, so nothing was delivered).
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   leaseId: the lease to give back
  ARGV[2..] pairs: partition (URI-encoded), group (URI-encoded)
  Returns the number of leases released.
  Resend-safe: naturally; a second run finds the leases no longer held by leaseId and changes
  nothing (it returns 0; the caller ignores the count).
]]
--@include drain-when-full
--@include ckey
--@include clock
--@include release-lease
--@include reschedule

local base, lease = KEYS[1], ARGV[1]
local now = now_ms()
local released = 0
for i = 2, #ARGV, 2 do
  local p, g = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', ckey(base, p, g), 'lease') == lease then
    release_lease(base, p, g, lease)
    reschedule(base, p, g, now)
    released = released + 1
  end
end
return released
