--[[
  Reserves in-flight slots (leased, unacknowledged messages) for a pop before it leases: up to
  `want`, as many as the tenant's budget leaves. The reservation is the pop's lease id with its
  weight; inflight-settle turns it into the messages the pop leased (or gives it back), and it
  expires on its own after reserveMs if the node never settles it.
  KEYS[1]   base: <prefix>{limits}: (every key the script touches is this text plus a suffix)
  ARGV[1]   default: the tenant's limit without an override (negative: none)
  ARGV[2]   tenant: the encoded tenant
  ARGV[3]   leaseId: the pop's lease id
  ARGV[4]   want: the pop's batch
  ARGV[5]   reserveMs: how long an unsettled reservation holds its slots
  Returns { 1, granted } (1 <= granted <= want) or { 0, retryAfterMs } when no slot is free
  (retryAfterMs: until the tenant's earliest lease or reservation expires).
  Resend-safe: per-request id, the lease id. A second run finds the lease's weight and answers
  it without reserving again.
]]
--@include clock
--@include limit-of
--@include prune-leases
local base = KEYS[1]
local tenant = ARGV[2]
local lease = ARGV[3]
local weights = base .. 'lw:' .. tenant
local now = now_ms()
prune_leases(base, tenant, now)
local held = redis.call('HGET', weights, lease)
if held then return { 1, tonumber(held) } end

local want = tonumber(ARGV[4])
local limit = limit_of(base, 'inflight', tenant, tonumber(ARGV[1]))
local granted = want
if limit >= 0 then
  local free = limit - (tonumber(redis.call('HGET', weights, '~total')) or 0)
  if free < granted then granted = free end
end
if granted <= 0 then
  local earliest = redis.call('ZRANGE', base .. 'lz:' .. tenant, 0, 0, 'WITHSCORES')
  local wait = 1000
  if earliest[2] then wait = math.max(1, tonumber(earliest[2]) - now) end
  return { 0, wait }
end
redis.call('HSET', weights, lease, granted)
redis.call('HINCRBY', weights, '~total', granted)
redis.call('ZADD', base .. 'lz:' .. tenant, now + tonumber(ARGV[5]), lease)
redis.call('HSET', base .. 'lg', lease, tenant)
redis.call('ZADD', base .. 'seen:inflight', now, tenant)
return { 1, granted }
