--@include age-horizon
--@include entry-id
--@include fmt
--@include outbox
--@include queue-depth
--@include record-data
--@include record-fields
--@include schedule-trim

-- A message argument starting with this byte ('5', redis/message-record.ts FIVE_FIELDS) is a
-- record to store as the five fields of earlier releases: a node of one is connected.
local FIVE_FIELDS = string.byte('5')

-- Appends the items of one queue (read_push_item's tables).
-- Returns per item {status, messageId} (status 1 queued, 0 duplicate) or nil, size when full.
-- An item whose transactionId is stored under its own messageId (the node's fresh id for
-- this request) was stored by a first run of the same request: answered queued again.
local function push_items(base, items, cfg, now, namespace, task)
  local cfgkey = base .. 'cfg'
  if redis.call('HSETNX', cfgkey, 'createdAt', fmt(now)) == 1 then
    redis.call('HSET', cfgkey, 'namespace', namespace, 'task', task)
  end
  -- Dedup lookups: one HMGET per partition, not one HGET per item.
  local by_partition, partitions = {}, {}
  for i, it in ipairs(items) do
    local list = by_partition[it.partition]
    if not list then
      list = {}
      by_partition[it.partition] = list
      partitions[#partitions + 1] = it.partition
    end
    list[#list + 1] = i
  end
  local stored = {}
  for _, p in ipairs(partitions) do
    local list = by_partition[p]
    local txns = {}
    for j, i in ipairs(list) do txns[j] = items[i].transactionId end
    for s = 1, #txns, 1000 do
      local values = redis.call('HMGET', base .. 'd:' .. p, unpack(txns, s, math.min(s + 999, #txns)))
      for j, v in ipairs(values) do stored[list[s + j - 1]] = v end
    end
  end
  local seen = {}
  local fresh = 0
  local results = {}
  -- Items this very request stored already (a resent script: the node's messageId matches).
  local again = {}
  for i, it in ipairs(items) do
    local key = it.partition .. '\n' .. it.transactionId
    local existing = seen[key]
    if not existing then
      local d = stored[i]
      if d then
        existing = string.match(d, ' (.*)$')
        if existing == it.messageId then again[i] = true end
      end
    end
    if again[i] then
      seen[key] = existing
      results[i] = { 1, existing }
    elseif existing then
      results[i] = { 0, existing }
    else
      seen[key] = it.messageId
      fresh = fresh + 1
      results[i] = { 1, it.messageId }
    end
  end
  local groups = redis.call('HKEYS', base .. 'groups')
  -- Only new messages can overflow: a push of duplicates alone (a client's retry) is answered
  -- as such even over maxSize, as in process and in transactions (issue #11, differential test).
  if cfg.maxSize > 0 and fresh > 0 then
    -- Room held for pushes of prepared transactions across slots (txn-prepare-1.lua) counts.
    local depth = queue_depth(base, groups) + tonumber(redis.call('HGET', base .. 'stats', 'txpush') or '0')
    if depth + fresh > cfg.maxSize then return nil, depth end
  end
  local touched = {}
  local dedup_writes = {}
  local bridge_pushed = cfg.bridgeTopic ~= '' and cfg.bridgeOn ~= 'completed'
  for i, it in ipairs(items) do
    if results[i][1] == 1 and not again[i] then
      local p = it.partition
      local id
      if string.byte(it.message, 1) == FIVE_FIELDS then
        local m, t, tr, d, s = record_fields(string.sub(it.message, 2))
        id = redis.call('XADD', base .. 's:' .. p, new_entry_id(), 'm', m, 't', t, 'tr', tr, 'd', d, 's', s)
      else
        id = redis.call('XADD', base .. 's:' .. p, new_entry_id(), 'r', it.message)
      end
      if bridge_pushed then
        outbox_bridge(base, cfg, 'pushed', p, it.messageId, it.transactionId, '', record_data(it.message))
      end
      local writes = dedup_writes[p]
      if not writes then
        writes = {}
        dedup_writes[p] = writes
      end
      writes[#writes + 1] = it.transactionId
      writes[#writes + 1] = id .. ' ' .. it.messageId
      if not touched[p] then
        touched[p] = true
        redis.call('HSET', base .. 'parts', p, it.partitionId)
        redis.call('HSET', base .. 'pids', it.partitionId, p)
        for _, g in ipairs(groups) do
          redis.call('ZADD', base .. 'ready:' .. g, 'NX', now, p)
        end
        local horizon = age_horizon(cfg)
        if horizon > 0 then schedule_trim(base, p, now + horizon * 1000) end
      end
    end
  end
  for _, p in ipairs(partitions) do
    local writes = dedup_writes[p]
    if writes then
      for s = 1, #writes, 1000 do
        redis.call('HSET', base .. 'd:' .. p, unpack(writes, s, math.min(s + 999, #writes)))
      end
    end
  end
  if fresh > 0 then
    redis.call('HINCRBY', base .. 'stats', 'pushed', fresh)
    redis.call('HINCRBY', base .. 'stats', 'size', fresh)
    for _, g in ipairs(groups) do redis.call('HINCRBY', base .. 'stats', 'pending:' .. g, fresh) end
  end
  return results
end
