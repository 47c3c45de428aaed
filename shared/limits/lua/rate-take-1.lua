--[[
  Takes `cost` units from the rate budget of one kind of each listed tenant, all or none. A
  budget of L per second admits L units at once, then one every 1000/L ms (GCRA: the tenant's
  `r:<kind>:<tenant>` key holds its theoretical arrival time, and expires when it is back in
  the past).
  KEYS[1]   base: <prefix>{limits}: (every key the script touches is this text plus a suffix)
  ARGV[1]   requestId: the node's id for this call (the resend memo)
  ARGV[2]   kind: push | publish
  ARGV[3]   default: the limit per second of a tenant without an override (negative: none)
  ARGV[4..] pairs: tenant, cost (open); each tenant once, each cost a positive integer
  Returns { 1 } when taken from every tenant; { 0, retryAfterMs, index } when the tenant of pair
  `index` (from 1) has too little budget left now; { 2, limit, index } when its cost exceeds its
  whole budget, so it never fits. Nothing is taken unless the answer is { 1 }.
  Resend-safe: per-request id. The first run's answer is kept at m:<requestId> for 60 s; a
  second run answers it without taking anything again.
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
    if cost > limit then
      answer = { 2, limit, index }
      break
    end
    local key = base .. 'r:' .. kind .. ':' .. tenant
    local arrival = tonumber(redis.call('GET', key)) or now
    if arrival < now then arrival = now end
    local after = arrival + cost * 1000 / limit
    -- A thousandth of a microsecond of slack: 1000/L added L times is not exactly 1000 in doubles.
    if after - now > 1000.000001 then
      answer = { 0, math.ceil(after - now - 1000), index }
      break
    end
    plan[#plan + 1] = { tenant = tenant, after = after }
  end
end
if answer[1] == 1 then
  for _, step in ipairs(plan) do
    local key = base .. 'r:' .. kind .. ':' .. step.tenant
    redis.call('SET', key, string.format('%.17g', step.after), 'PX', math.ceil(step.after - now) + 1)
    redis.call('ZADD', base .. 'seen:' .. kind, now, step.tenant)
  end
end
redis.call('SET', memo, cjson.encode(answer), 'PX', 60000)
return answer
