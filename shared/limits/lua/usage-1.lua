--[[
  What the tenants seen in the last 10 minutes use of one kind of limit, for the admin route and
  the console: the most recently seen first. A rate's use is the units in its bucket now; an
  in-flight budget's, the messages leased and not acknowledged; a slot kind's, the slots held by
  live nodes.
  KEYS[1]   base: <prefix>{limits}: (every key the script touches is this text plus a suffix)
  ARGV[1]   kind: push | publish | inflight | subscriptions
  ARGV[2]   default: the limit of a tenant without an override (negative: none)
  ARGV[3]   max: how many tenants to report
  Returns { tenant, used, limit } triples, flattened.
  Resend-safe: naturally. It only ends what time has already ended (seen entries older than
  10 minutes, expired in-flight leases, nodes gone for an hour), which a second run finds done.
]]
--@include clock
--@include limit-of
--@include prune-leases
--@include live-count
local base = KEYS[1]
local kind = ARGV[1]
local default = tonumber(ARGV[2])
local now = now_ms()
local seen = base .. 'seen:' .. kind
redis.call('ZREMRANGEBYSCORE', seen, '-inf', now - 600000)
local tenants = redis.call('ZREVRANGE', seen, 0, tonumber(ARGV[3]) - 1)
local out = {}
for _, tenant in ipairs(tenants) do
  local limit = limit_of(base, kind, tenant, default)
  local used = 0
  if kind == 'inflight' then
    prune_leases(base, tenant, now)
    used = tonumber(redis.call('HGET', base .. 'lw:' .. tenant, '~total')) or 0
  elseif kind == 'subscriptions' then
    used = live_count(base, kind, tenant, now)
  else
    local state = redis.call('GET', base .. 'r:' .. kind .. ':' .. tenant)
    if state and limit > 0 then
      local units, at = string.match(state, '^(%S+) (%S+)$')
      used = math.max(0, math.ceil(tonumber(units) - (now - tonumber(at)) * limit / 1000 - 0.000001))
    end
  end
  out[#out + 1] = tenant
  out[#out + 1] = used
  out[#out + 1] = limit
end
return out
