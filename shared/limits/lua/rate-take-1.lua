--[[
  Takes `cost` units from the rate budget of one kind of each listed tenant, all or none. A
  budget of L per second holds at most L units and drains at L units a second (a leaky bucket:
  the tenant's `r:<kind>:<tenant>` key holds "<units> <ms>", its level at a time, and expires
  once drained). Kept in units, not in time, so a changed limit applies to the level at once.
  A limit of 0 admits nothing.
  KEYS[1]   base: <prefix>{limits}: (every key the script touches is this text plus a suffix)
  ARGV[1]   requestId: the node's id for this call (the resend memo)
  ARGV[2]   kind: push | publish
  ARGV[3]   default: the limit per second of a tenant without an override (negative: none)
  ARGV[4..] pairs: tenant, cost (open); each tenant once, each cost a positive integer
  Returns { 1 } when taken from every tenant; { 0, retryAfterMs, index } when the tenant of pair
  `index` (from 1) has too little budget left now; { 2, limit, index } when its cost exceeds its
  whole budget, so it never fits. Nothing is taken unless the answer is { 1 }.
  Resend-safe: per-request id. The first run's answer is kept at m:<requestId> for 10 s, and a
  second run within it answers it without taking anything again. 10 s, not the 60 s of the
  other scripts, because a memo is written per push or publish (at 10,000 a second, ~100,000
  keys, ~15 MB); ioredis resends when the connection is back, in practice within seconds. A
  resend later than that takes again: it can only refuse more, never admit more.
]]
--@include clock
--@include limit-of
local base = KEYS[1]
local memo = base .. 'm:' .. ARGV[1]
local kept = redis.call('GET', memo)
if kept then return cjson.decode(kept) end

local now = now_ms()
local kind = ARGV[2]
local default = tonumber(ARGV[3])
local plan = {}
local answer = { 1 }
for i = 4, #ARGV, 2 do
  local tenant = ARGV[i]
  local cost = tonumber(ARGV[i + 1])
  local index = (i - 2) / 2
  local limit = limit_of(base, kind, tenant, default)
  if limit >= 0 then
    if limit == 0 then
      answer = { 0, 1000, index }
      break
    end
    if cost > limit then
      answer = { 2, limit, index }
      break
    end
    local level = 0
    local state = redis.call('GET', base .. 'r:' .. kind .. ':' .. tenant)
    if state then
      local units, at = string.match(state, '^(%S+) (%S+)$')
      level = math.max(0, tonumber(units) - (now - tonumber(at)) * limit / 1000)
    end
    -- A millionth of a unit of slack: draining by limit/1000 per ms is not exact in doubles.
    if level + cost > limit + 0.000001 then
      answer = { 0, math.ceil((level + cost - limit) * 1000 / limit), index }
      break
    end
    local after = level + cost
    plan[#plan + 1] = { tenant = tenant, after = after, limit = limit }
  end
end
if answer[1] == 1 then
  for _, step in ipairs(plan) do
    local key = base .. 'r:' .. kind .. ':' .. step.tenant
    local state = string.format('%.17g %.0f', step.after, now)
    redis.call('SET', key, state, 'PX', math.ceil(step.after * 1000 / step.limit) + 1)
    redis.call('ZADD', base .. 'seen:' .. kind, now, step.tenant)
  end
end
redis.call('SET', memo, cjson.encode(answer), 'PX', 10000)
return answer
