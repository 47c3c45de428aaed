--[[
  Leases up to `batch` messages of one queue for one consumer group.
  KEYS[1]   base: <prefix>{<queue>}: (every other key the script touches is this text plus a suffix)
  KEYS[2..] leaseIndex: the lease index key (`<prefix>lease:<leaseId>`, queue-store.ts), given
            where every key lives on one server, absent on Redis Cluster (it is in another slot
            than the queue's keys: the node writes it there). Written here, a pop's lease is
            indexed in the same call: one round trip per pop, not two.
  ARGV[1]   group: the consumer group (URI-encoded)
  ARGV[2]   partition: the partition (URI-encoded), '' for any partition
  ARGV[3]   batch: global cap on delivered messages
  ARGV[4]   maxPartitions: partitions one call may lease (wildcard pop)
  ARGV[5]   leaseId: the lease id for this pop (chosen by the node)
  ARGV[6]   start: subscription start for a new group: '0-0' (all) or a position ('<ms-1>-<max>')
  ARGV[7]   queue: the queue's name (the lease index's value)
  ARGV[8]   indexGrace: how long the lease index outlives the lease (ms)
  Returns { nextReadyAt, { partition, partitionId, leaseId, expiresAt, { streamId, record,
  retryCount, ... } }... }: each leased partition's messages as one flat list, 3 entries per
  message (a table per message cost Redis a tenth of the pop, in building it and in its reply,
  and the node a parsed array each); record: the message as its stream keeps it
  (includes/message-fields.lua), the node reads its fields. nextReadyAt (ms, 0 if none)
  tells a parked long-poll when a delayed, retried or leased partition becomes poppable.
  Bounded by size as well as by count: a pop answers at most POP_BYTES of records (always at
  least one message, however large: docs/broker-api.md, "Large messages"), and reads its entries
  a few at a time while they are large (includes/read-sized.lua).
  Resend-safe: per request id (shared/redis/README.md). The node picks the lease id before the
  call, so a second run with the same ARGV finds `lease:<leaseId>` already holding partitions and
  answers the messages the first run leased, without leasing again or counting an attempt
  (the lease index is set again to the same value and expiry: a SET, the same after any number).
]]
--@include drain-when-full
--@include advance
--@include ckey
--@include clock
--@include create-group
--@include expire-lease
--@include fmt
--@include id-ms
--@include message-record
--@include position
--@include queue-config
--@include read-sized
--@include resolve
--@include schedule-trim

local base, g, only = KEYS[1], ARGV[1], ARGV[2]
local batch = tonumber(ARGV[3])
local max_partitions = tonumber(ARGV[4])
local lease_id = ARGV[5]
local index_key, queue_name, index_grace = KEYS[2], ARGV[7], tonumber(ARGV[8])
local now = now_ms()
local cfg = queue_config(base)
local ready = base .. 'ready:' .. g

-- Records one pop answers at most (bytes; the first message always goes).
local POP_BYTES = 16777216

-- The reply row of one leased partition: its messages with their retry counts.
local function leased_row(p, exp, picked)
  local rc = base .. 'rc:' .. p .. ':' .. g
  local counts = {}
  if redis.call('EXISTS', rc) == 1 then
    local ids = {}
    for i, e in ipairs(picked) do ids[i] = e[1] end
    for s = 1, #ids, 1000 do
      local values = redis.call('HMGET', rc, unpack(ids, s, math.min(s + 999, #ids)))
      for j, v in ipairs(values) do counts[s + j - 1] = tonumber(v or '0') end
    end
  end
  local msgs = {}
  local k = 0
  for i, e in ipairs(picked) do
    msgs[k + 1], msgs[k + 2], msgs[k + 3] = e[1], message_record(e), counts[i] or 0
    k = k + 3
  end
  return { p, redis.call('HGET', base .. 'parts', p) or '', lease_id, fmt(exp), msgs }
end

local function next_ready()
  local first = redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')
  if #first > 0 then return fmt(tonumber(first[2])) end
  return '0'
end

-- The answer, with the lease indexed when the node gave its key (KEYS[2]). Every leased row
-- of one pop expires together (now + leaseTime when it was taken).
local function answer(out)
  if index_key and #out > 0 then
    local exp = tonumber(out[1][4])
    redis.call('SET', index_key, queue_name, 'PX', math.max(1000, exp - now + index_grace))
  end
  return { next_ready(), out }
end

-- A resend (the first run's reply was lost): rebuild the first run's answer from the lease it
-- took. Its batch is every entry after pos up to `upto` not resolved ahead of pos (exactly what
-- the first run picked: nothing can be acked under a lease id nobody has received yet).
local held = redis.call('SMEMBERS', base .. 'lease:' .. lease_id)
if #held > 0 then
  local out = {}
  for _, m in ipairs(held) do
    local p, hg = string.match(m, '^(.-)\n(.*)$')
    local st = redis.call('HMGET', ckey(base, p, g), 'lease', 'exp', 'upto')
    if hg == g and st[1] == lease_id and st[3] and tonumber(st[2] or '0') > now then
      local aset = base .. 'a:' .. p .. ':' .. g
      local resolved_ahead = redis.call('SCARD', aset) > 0
      local picked = {}
      local from = '(' .. position(base, p, g)
      while true do
        local entries = read_sized('XRANGE', base .. 's:' .. p, from, st[3], math.huge)
        if #entries == 0 then break end
        for _, e in ipairs(entries) do
          if not resolved_ahead or redis.call('SISMEMBER', aset, e[1]) == 0 then picked[#picked + 1] = e end
        end
        from = '(' .. entries[#entries][1]
      end
      if #picked > 0 then out[#out + 1] = leased_row(p, tonumber(st[2]), picked) end
    end
  end
  return answer(out)
end

if create_group(base, g, ARGV[6]) then
  -- A new group: every existing partition may hold work for it (once per group, not per pop),
  -- and messages it has not consumed may be due for maxWaitTimeSeconds: retention looks again.
  local parts = redis.call('HKEYS', base .. 'parts')
  for _, p in ipairs(parts) do
    redis.call('ZADD', ready, 'NX', now, p)
    schedule_trim(base, p, now)
  end
end

local candidates
if only ~= '' then
  -- An unknown partition has nothing, but nextReadyAt still reports the group's other
  -- partitions (a parked pop that cannot take their work hands the wake-up on).
  if redis.call('HEXISTS', base .. 'parts', only) == 0 then candidates = {} else candidates = { only } end
else
  candidates = redis.call('ZRANGEBYSCORE', ready, '-inf', now, 'LIMIT', 0, max_partitions + 16)
end

local out = {}
local remaining = batch
local claimed = 0
local answered_bytes = 0
local full = false
for _, p in ipairs(candidates) do
  if full or remaining <= 0 or claimed >= max_partitions then break end
  local ck = ckey(base, p, g)
  local st = redis.call('HMGET', ck, 'lease', 'exp', 'nb')
  local skip_until = nil
  if st[1] then
    local exp = tonumber(st[2] or '0')
    if exp > now then skip_until = exp else expire_lease(base, p, g, cfg, now) end
  end
  if not skip_until then
    local nb = tonumber(redis.call('HGET', ck, 'nb') or '0')
    if nb > now then skip_until = nb end
  end
  local stream = base .. 's:' .. p
  if not skip_until and cfg.windowBuffer > 0 then
    local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
    if #last > 0 and id_ms(last[1][1]) + cfg.windowBuffer * 1000 > now then
      skip_until = id_ms(last[1][1]) + cfg.windowBuffer * 1000
    end
  end
  if skip_until then
    redis.call('ZADD', ready, skip_until, p)
  else
    local aset = base .. 'a:' .. p .. ':' .. g
    -- Usually empty (in-order acks move pos instead): then no per-message membership test.
    local resolved_ahead = redis.call('SCARD', aset) > 0
    local leased_from = position(base, p, g)
    local from = '(' .. leased_from
    local picked = {}
    local visible_at = nil
    local expired_any = false
    -- An entry's time is read only where a rule needs it (a string parse per entry otherwise).
    local timed = cfg.ttl > 0 or cfg.delayedProcessing > 0
    local count = 0
    while count < remaining and not visible_at and not full do
      local entries = read_sized('XRANGE', stream, from, '+', remaining - count + 8)
      if #entries == 0 then break end
      local last
      for _, e in ipairs(entries) do
        if count >= remaining then break end
        local id = e[1]
        local size = entry_bytes(e)
        last = id
        if not resolved_ahead or redis.call('SISMEMBER', aset, id) == 0 then
          local ms = timed and id_ms(id)
          if cfg.ttl > 0 and ms + cfg.ttl * 1000 <= now then
            resolve(base, p, g, id)
            expired_any = true
          elseif cfg.delayedProcessing > 0 and ms + cfg.delayedProcessing * 1000 > now then
            visible_at = ms + cfg.delayedProcessing * 1000
            break
          else
            if answered_bytes > 0 and answered_bytes + size > POP_BYTES then
              full = true
              break
            end
            answered_bytes = answered_bytes + size
            count = count + 1
            picked[count] = e
          end
        end
      end
      from = '(' .. last
    end
    if expired_any then
      advance(base, p, g)
      leased_from = position(base, p, g)
    end
    if #picked == 0 then
      -- Full before this partition's first message: it stays ready as it is.
      if visible_at then redis.call('ZADD', ready, visible_at, p)
      elseif not full then redis.call('ZREM', ready, p) end
    else
      local exp = now + cfg.leaseTime * 1000
      local upto = picked[#picked][1]
      -- `from`: the position the batch was taken after, tied to this lease (ack-many.lua,
      -- advance_whole_lease: an ack of the whole lease moves pos to upto without reading it back).
      redis.call('HSET', ck, 'lease', lease_id, 'exp', fmt(exp), 'upto', upto, 'n', #picked,
        'from', lease_id .. ' ' .. leased_from)
      redis.call('DEL', base .. 'r:' .. p .. ':' .. g)
      redis.call('ZADD', ready, exp, p)
      redis.call('ZADD', base .. 'leases', exp, p .. '\n' .. g)
      local lkey = base .. 'lease:' .. lease_id
      redis.call('SADD', lkey, p .. '\n' .. g)
      redis.call('PEXPIREAT', lkey, exp + 60000)
      out[#out + 1] = leased_row(p, exp, picked)
      remaining = remaining - #picked
      claimed = claimed + 1
    end
  end
end

return answer(out)
