--[[
  Takes one slot of one kind (a hub's concurrent subscriptions) for a tenant on one node, when
  the tenant's slots held by live nodes leave room. A node's slots count while its lease
  (`nodes:<kind>`, renewed by node-renew and by this script) is live: a node killed without
  giving its slots back frees them when its lease expires.
  KEYS[1]   base: <prefix>{limits}: (every key the script touches is this text plus a suffix)
  ARGV[1]   requestId: the node's id for this call (the resend memo)
  ARGV[2]   kind: subscriptions
  ARGV[3]   default: the tenant's limit without an override (negative: none)
  ARGV[4]   tenant: the encoded tenant
  ARGV[5]   nodeId: the node taking the slot
  ARGV[6]   leaseMs: how long the node's slots count without a renewal
  Returns { 1, used } when taken (used: the tenant's live slots, this one included), or
  { 0, limit } when the tenant has none left.
  Resend-safe: per-request id. The first run's answer is kept at m:<requestId> for 60 s; a
  second run answers it without taking a second slot.
]]
--@include clock
--@include limit-of
--@include live-count
local base = KEYS[1]
local memo = base .. 'm:' .. ARGV[1]
local kept = redis.call('GET', memo)
if kept then return cjson.decode(kept) end

local now = now_ms()
local kind = ARGV[2]
local tenant = ARGV[4]
local node = ARGV[5]
redis.call('ZADD', base .. 'nodes:' .. kind, now + tonumber(ARGV[6]), node)
local used = live_count(base, kind, tenant, now)
local limit = limit_of(base, kind, tenant, tonumber(ARGV[3]))
local answer
if limit >= 0 and used + 1 > limit then
  answer = { 0, limit }
else
  redis.call('HINCRBY', base .. 'n:' .. kind .. ':' .. tenant, node, 1)
  redis.call('ZADD', base .. 'seen:' .. kind, now, tenant)
  answer = { 1, used + 1 }
end
redis.call('SET', memo, cjson.encode(answer), 'PX', 60000)
return answer
