--[[
  Applies the retention rules of docs/broker-api.md ("Queue options", Queen's retention and eviction
  services) to the partitions of one queue that are due in its `trim` index. It deletes, with
  their dedup entries:
   - completed: resolved by every group and older than completedRetentionSeconds, only when
     retentionEnabled and completedRetentionSeconds > 0;
   - expired: older than retentionSeconds, consumed or not, only when retentionEnabled and
     retentionSeconds > 0; and older than ttl (never delivered anyway);
   - evicted: older than maxWaitTimeSeconds and still waiting for some group (or for the first
     group to come), whatever retentionEnabled: deleted, not dead-lettered.
  Nothing after the position of a group holding a lease is removed by age: the holder may
  still ack it; once due, the partition is looked at again a second later. A deleted prefix of the
  stream goes with XTRIM MINID (frees whole stream nodes), evicted messages behind kept
  completed ones with XDEL. Groups behind a deleted range move past it.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   limit: partitions handled per call
  ARGV[2]   perPartition: maximum entries deleted per partition per call
  ARGV[3]   perCall: maximum entries deleted per call (partitions after it stay due)
  Returns { deleted, more }: more is 1 when partitions are still due now (call again).
  Resend-safe: naturally; cuts are by time and position, so a second run deletes only what became
  due in between, and counters (size, pending:<g>) move only for entries it deletes.
]]
--@include drain-when-full
--@include call-chunked
--@include ckey
--@include clock
--@include each-entry
--@include entry-transaction
--@include fmt
--@include id-cmp
--@include id-ms
--@include position
--@include queue-config

local base = KEYS[1]
local limit, per_partition, per_call = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local cfg = queue_config(base)
local stats = base .. 'stats'
local trim = base .. 'trim'
local due = redis.call('ZRANGEBYSCORE', trim, '-inf', now, 'LIMIT', 0, limit)
local groups = redis.call('HKEYS', base .. 'groups')

-- Windows in ms (0: the rule does not apply).
local age_window = 0
if cfg.retentionEnabled and cfg.retentionSeconds > 0 then age_window = cfg.retentionSeconds * 1000 end
if cfg.ttl > 0 and (age_window == 0 or cfg.ttl * 1000 < age_window) then age_window = cfg.ttl * 1000 end
local done_window = 0
if cfg.retentionEnabled and cfg.completedRetentionSeconds > 0 then
  done_window = cfg.completedRetentionSeconds * 1000
end
local wait_window = cfg.maxWaitTimeSeconds * 1000

-- Deletes `doomed` (entries in stream order) from partition p; `prefix`: they are the first
-- entries of the stream. Returns how many.
local function drop(p, doomed, prefix)
  local stream = base .. 's:' .. p
  local ids, txns = {}, {}
  for k, e in ipairs(doomed) do
    ids[k] = e[1]
    txns[k] = entry_transaction(e)
  end
  call_chunked('HDEL', base .. 'd:' .. p, txns)
  local last = ids[#ids]
  local ms, seq = string.match(last, '^(%d+)-(%d+)$')
  if prefix and #seq < 15 then
    redis.call('XTRIM', stream, 'MINID', ms .. '-' .. fmt(tonumber(seq) + 1))
  else
    call_chunked('XDEL', stream, ids)
  end
  redis.call('HINCRBY', stats, 'size', -#ids)
  for _, g in ipairs(groups) do
    local pos = position(base, p, g)
    if id_cmp(pos, last) < 0 then
      -- Every entry between pos and last is deleted here: the group moves past them, and
      -- those it had not resolved leave its backlog.
      local aset = base .. 'a:' .. p .. ':' .. g
      local resolved_ahead = redis.call('SCARD', aset) > 0
      local lost = 0
      for _, id in ipairs(ids) do
        if id_cmp(id, pos) > 0 and (not resolved_ahead or redis.call('SREM', aset, id) == 0) then
          lost = lost + 1
        end
      end
      redis.call('HSET', ckey(base, p, g), 'pos', last)
      if lost > 0 then redis.call('HINCRBY', stats, 'pending:' .. g, -lost) end
    end
    local rc = base .. 'rc:' .. p .. ':' .. g
    if redis.call('EXISTS', rc) == 1 then call_chunked('HDEL', rc, ids) end
  end
  return #ids
end

-- Bytes of entries one call reads (read-sized.lua): a call that reaches them stops after the
-- entry that did, and the partitions left stay due.
local RETENTION_BYTES = 33554432
local function room() return read_seen.bytes < RETENTION_BYTES end

local deleted = 0
for _, p in ipairs(due) do
  if deleted >= per_call or not room() then break end
  local stream = base .. 's:' .. p
  -- Everything up to min_pos is resolved by every group; leased batches sit after a group's pos.
  local min_pos, leased_pos = nil, nil
  for _, g in ipairs(groups) do
    local pos = position(base, p, g)
    if not min_pos or id_cmp(pos, min_pos) < 0 then min_pos = pos end
    if redis.call('HEXISTS', ckey(base, p, g), 'lease') == 1 then
      if not leased_pos or id_cmp(pos, leased_pos) < 0 then leased_pos = pos end
    end
  end
  local function consumed(id) return min_pos ~= nil and id_cmp(id, min_pos) <= 0 end
  local function held(id) return leased_pos ~= nil and id_cmp(id, leased_pos) > 0 end
  local budget = math.min(per_partition, per_call - deleted)

  -- A prefix of the stream: completed, expired or evicted entries, up to the first one kept.
  local doomed, stop = {}, nil
  local _, more = each_entry('XRANGE', stream, '-', '+', budget, function(e)
    local ms = id_ms(e[1])
    local done = consumed(e[1])
    local free = not held(e[1])
    if (done and done_window > 0 and ms <= now - done_window)
      or (free and age_window > 0 and ms <= now - age_window)
      or (free and not done and wait_window > 0 and ms <= now - wait_window) then
      doomed[#doomed + 1] = e
      return room()
    end
    stop = e
    return false
  end)
  if #doomed > 0 then deleted = deleted + drop(p, doomed, true) end
  more = stop == nil and more

  -- Eviction behind completed messages that are kept: the waiting ones right after min_pos.
  local waiting = nil
  if stop and not consumed(stop[1]) then
    waiting = stop
  elseif stop and wait_window > 0 then
    local left = budget - #doomed
    if left > 0 and room() then
      local evicted = {}
      local _, run_more = each_entry('XRANGE', stream, '(' .. min_pos, '+', left, function(e)
        if not held(e[1]) and id_ms(e[1]) <= now - wait_window then
          evicted[#evicted + 1] = e
          return room()
        end
        waiting = e
        return false
      end)
      if #evicted > 0 then deleted = deleted + drop(p, evicted, false) end
      if not waiting and run_more then more = true end
    else
      more = true
    end
  end

  -- When to look again: now when a batch was full, else when the first kept entry is due.
  local next_at = nil
  local function at(t)
    if not next_at or t < next_at then next_at = t end
  end
  if more then at(now) end
  -- A held entry is due when a free one would be; once due, it is looked at again every second
  -- while the lease holds it. (Every second from the lease's start read the leased partitions
  -- each second for the whole lease, large entries included.)
  local function due_at(e, window)
    local t = id_ms(e[1]) + window
    if held(e[1]) and t < now + 1000 then t = now + 1000 end
    return t
  end
  if stop then
    local ms = id_ms(stop[1])
    if consumed(stop[1]) and done_window > 0 then at(ms + done_window) end
    if age_window > 0 then at(due_at(stop, age_window)) end
  end
  if waiting and wait_window > 0 then at(due_at(waiting, wait_window)) end
  if next_at then
    redis.call('ZADD', trim, next_at, p)
  else
    redis.call('ZREM', trim, p)
  end
end
local still_due = 0
if #redis.call('ZRANGEBYSCORE', trim, '-inf', now, 'LIMIT', 0, 1) > 0 then still_due = 1 end
return { deleted, still_due }
