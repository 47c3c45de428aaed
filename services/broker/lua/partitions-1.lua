--[[
  Per-partition state of one queue, for the detailed views (queue detail, a consumer group's
  partitions, lagging partitions; docs/broker-queen.md "Queen compatibility"). Reads only.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   limit: partitions read at most (in the order of the parts hash)
  ARGV[2]   cap: entries counted at most per partition and group (the lag is a lower bound beyond)
  ARGV[3]   deadRead: dead letters read at most, newest first (counted per partition)
  ARGV[4]   budget: entries counted at most in all (then one per partition and group: its
            oldest), so one call stays short whatever the backlog; VIEW_BYTES of entries read
            in all bounds it too, whatever the messages' size
  Returns { { partition (URI-encoded), partitionId, retained, oldestMs, newestMs (0: none),
              deadLetters, { { group (URI-encoded), lag, oldestPendingMs (0: none),
                               leaseActive (0|1), leased (unanswered messages of the lease) }... }
            }... }
  Resend-safe: writes nothing.
]]
--@include ckey
--@include clock
--@include each-entry
--@include field
--@include fmt
--@include id-ms
--@include position

local base = KEYS[1]
local limit, cap, dead_read = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local budget = tonumber(ARGV[4])
local now = now_ms()
local groups = redis.call('HKEYS', base .. 'groups')
local dead = {}
-- Bytes of entries one call reads (read-sized.lua): past them, dead letters are no longer
-- counted and each partition and group reads one entry (its oldest), as past `budget`.
local VIEW_BYTES = 33554432
local function room() return read_seen.bytes < VIEW_BYTES end
each_entry('XREVRANGE', base .. 'dlq', '+', '-', dead_read, function(e)
  local p = field(e, 'p')
  if p then dead[p] = (dead[p] or 0) + 1 end
  return room()
end)

local function first_ms(entries)
  if #entries == 0 then return 0 end
  return id_ms(entries[1][1])
end

local out = {}
local parts = redis.call('HGETALL', base .. 'parts')
for i = 1, math.min(#parts, limit * 2), 2 do
  local p = parts[i]
  local stream = base .. 's:' .. p
  local per_group = {}
  for _, g in ipairs(groups) do
    local aset = base .. 'a:' .. p .. ':' .. g
    local want = 1
    if room() then want = math.max(1, math.min(cap, budget)) end
    local oldest = 0
    local counted = each_entry('XRANGE', stream, '(' .. position(base, p, g), '+', want, function(e)
      if oldest == 0 and redis.call('SISMEMBER', aset, e[1]) == 0 then oldest = id_ms(e[1]) end
      return room()
    end)
    budget = budget - counted
    local lag = counted - redis.call('SCARD', aset)
    local st = redis.call('HMGET', ckey(base, p, g), 'lease', 'exp', 'n')
    local active = st[1] and tonumber(st[2] or '0') > now
    local leased = 0
    if active then leased = tonumber(st[3] or '0') - redis.call('SCARD', base .. 'r:' .. p .. ':' .. g) end
    per_group[#per_group + 1] = { g, math.max(0, lag), fmt(oldest), active and 1 or 0, math.max(0, leased) }
  end
  out[#out + 1] = { p, parts[i + 1], redis.call('XLEN', stream),
    fmt(first_ms(redis.call('XRANGE', stream, '-', '+', 'COUNT', 1))),
    fmt(first_ms(redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1))), dead[p] or 0, per_group }
end
return out
