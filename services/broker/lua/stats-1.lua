--[[
  Snapshot of one queue for metrics and status routes, without walking every partition:
  each group's backlog (pending:<g>, what maxSize compares with), oldest pending age sampled
  from the first `sample` ready partitions of each group.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   sample: ready partitions sampled per group for the oldest pending age
  ARGV[2]   leases: leases read at most (their batch sizes and answered messages are counted)
  Returns { pushed, size, dlq, expiries, partitions, oldestPendingMs (0 if none), leased,
            { { group, resolved, pending, partitionsWithLag (its ready set),
                oldestPendingMs (0 if none), start position }... }, now, leasedBatch (messages
            of active leases), leasedAnswered (of them, answered) }
  Resend-safe: naturally; it writes nothing but, once for a queue stored by an earlier release,
  its groups' backlog count (ensure_backlog): a resend counts the same.
]]
--@include ckey
--@include clock
--@include ensure-backlog
--@include fmt
--@include id-ms
--@include position

local base = KEYS[1]
local sample = tonumber(ARGV[1])
local now = now_ms()
local groups = redis.call('HKEYS', base .. 'groups')
ensure_backlog(base, groups)
local stats = redis.call('HGETALL', base .. 'stats')
local s = {}
for i = 1, #stats, 2 do s[stats[i]] = tonumber(stats[i + 1]) end
local oldest = 0
local per_group = {}
for _, g in ipairs(groups) do
  local ready = base .. 'ready:' .. g
  local group_oldest = 0
  for _, p in ipairs(redis.call('ZRANGEBYSCORE', ready, '-inf', '+inf', 'LIMIT', 0, sample)) do
    local e = redis.call('XRANGE', base .. 's:' .. p, '(' .. position(base, p, g), '+', 'COUNT', 1)
    if #e > 0 then
      local ms = id_ms(e[1][1])
      if group_oldest == 0 or ms < group_oldest then group_oldest = ms end
    end
  end
  if group_oldest > 0 and (oldest == 0 or group_oldest < oldest) then oldest = group_oldest end
  per_group[#per_group + 1] = { g, s['resolved:' .. g] or 0, s['pending:' .. g] or 0,
    redis.call('ZCARD', ready), fmt(group_oldest), group_start(base, g) }
end
local batch, answered = 0, 0
for _, member in ipairs(redis.call('ZRANGEBYSCORE', base .. 'leases', now + 1, '+inf', 'LIMIT', 0, tonumber(ARGV[2]))) do
  local p, g = string.match(member, '^(.-)\n(.*)$')
  local n = tonumber(redis.call('HGET', ckey(base, p, g), 'n') or '0')
  batch = batch + n
  answered = answered + math.min(n, redis.call('SCARD', base .. 'r:' .. p .. ':' .. g))
end
local dlq = redis.call('XLEN', base .. 'dlq')
return { s['pushed'] or 0, s['size'] or 0, dlq, s['expiries'] or 0, redis.call('HLEN', base .. 'parts'),
  fmt(oldest), redis.call('ZCARD', base .. 'leases'), per_group, fmt(now), batch, answered }
