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
  The oldest pending age reads each sampled partition's next entry after the group's position,
  the whole entry (a stream has no read of ids alone): with a waiting head of 64 MiB one run took
  Redis 0.42–0.60 s, every run. So the id read is kept in `heads` ('<p>\n<g>' -> '<pos> <id>') and
  read again only once the group's position moved (includes/forget-entry.lua drops the field of
  an entry deleted ahead of a position). `heads` holds this run's sample, rewritten only when it
  changed.
  Resend-safe: naturally; what it writes (`heads`, and once for a queue stored by an earlier
  release its groups' backlog count, ensure_backlog) a resend writes the same.
]]
--@include drain-when-full
--@include call-chunked
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
local heads_key = base .. 'heads'
local kept = {}
local stored = redis.call('HGETALL', heads_key)
for i = 1, #stored, 2 do kept[stored[i]] = stored[i + 1] end
local heads, changed = {}, false
-- The id of the entry after pos on partition p (nil: none), from `heads` while pos stays.
local function head_after(p, g, pos)
  local field = p .. '\n' .. g
  local known = kept[field]
  local id
  if known and string.sub(known, 1, #pos + 1) == pos .. ' ' then
    id = string.sub(known, #pos + 2)
  else
    local e = redis.call('XRANGE', base .. 's:' .. p, '(' .. pos, '+', 'COUNT', 1)
    if #e == 0 then return nil end
    id = e[1][1]
    changed = true
  end
  heads[#heads + 1] = field
  heads[#heads + 1] = pos .. ' ' .. id
  return id
end

local oldest = 0
local per_group = {}
for _, g in ipairs(groups) do
  local ready = base .. 'ready:' .. g
  local group_oldest = 0
  for _, p in ipairs(redis.call('ZRANGEBYSCORE', ready, '-inf', '+inf', 'LIMIT', 0, sample)) do
    local id = head_after(p, g, position(base, p, g))
    if id then
      local ms = id_ms(id)
      if group_oldest == 0 or ms < group_oldest then group_oldest = ms end
    end
  end
  if group_oldest > 0 and (oldest == 0 or group_oldest < oldest) then oldest = group_oldest end
  per_group[#per_group + 1] = { g, s['resolved:' .. g] or 0, s['pending:' .. g] or 0,
    redis.call('ZCARD', ready), fmt(group_oldest), group_start(base, g) }
end
local kept_count = #stored / 2
if changed or kept_count ~= #heads / 2 then
  redis.call('DEL', heads_key)
  if #heads > 0 then call_chunked('HSET', heads_key, heads) end
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
