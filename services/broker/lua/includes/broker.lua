--[[
  Shared functions, inlined by the script loader where a script says `--@include broker`.

  Key layout under one queue's base `<prefix>{<queue>}:` (every key of a queue shares one
  hash tag, so every script touches one Redis Cluster slot). Partition and group names arrive
  URI-encoded (no ':' inside), so the keys below are unambiguous:
    cfg                 hash   queue options, namespace, task, createdAt
    parts / pids        hash   partition -> partitionId / partitionId -> partition
    groups              hash   group -> start position for partitions it has never read
    ready:<g>           zset   partition -> earliest time (ms) group g may find work there
                               (now: deliverable; lease expiry; retry delay; delayed message)
    leases              zset   "<p>\n<g>" -> lease expiry (ms), for the lease sweep
    lease:<leaseId>     set    "<p>\n<g>" held by one lease (expires with the lease)
    s:<p>               stream the partition's messages (id = time-ordered stream id)
    d:<p>               hash   transactionId -> "<streamId> <messageId>" (dedup, while retained)
    c:<p>:<g>           hash   pos (last position with everything before resolved), lease,
                               exp, upto (last id of the leased batch), n (batch size),
                               nb (not-before: retry delay)
    a:<p>:<g>           set    ids after pos already resolved (acked, dead-lettered, expired)
    r:<p>:<g>           set    ids answered (any status) under the current lease
    rc:<p>:<g>          hash   id -> failed attempts (acks with status failed, lease expiries)
    la:<leaseId>        hash   '<p>\n<txn>' -> answer ('done'|'failed'|'dlq' .. ':' .. dlq 0/1) of each ack
                               under that lease (expires 60 s after its last ack): a resent or
                               retried ack is answered as a repeat instead of being applied twice
    dlq                 stream dead letters
    rq:<messageId>      string count requeued by one dead-letter requeue call (60 s; a resend answers it)
    trim                zset   partition -> next time retention must look at it
    stats               hash   pushed, size (retained entries), resolved:<g>, dlq, expiries,
                               pending:<g> (retained entries group g has not resolved: maxSize),
                               backlog (set when every group's pending:<g> is counted)
]]

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function fmt(n)
  return string.format('%.0f', n)
end

local function id_ms(id)
  return tonumber(string.match(id, '^(%d+)'))
end

-- -1, 0, 1 comparing two stream ids (plain find: pattern captures showed in ack batches)
local function id_cmp(a, b)
  if a == b then return 0 end
  local ad = string.find(a, '-', 1, true)
  local bd = string.find(b, '-', 1, true)
  local am = tonumber(string.sub(a, 1, ad - 1))
  local bm = tonumber(string.sub(b, 1, bd - 1))
  if am ~= bm then
    if am < bm then return -1 else return 1 end
  end
  local as = tonumber(string.sub(a, ad + 1))
  local bs = tonumber(string.sub(b, bd + 1))
  if as == bs then return 0 elseif as < bs then return -1 else return 1 end
end

local function queue_config(base)
  local v = redis.call('HMGET', base .. 'cfg', 'leaseTime', 'retryLimit', 'retryDelay',
    'delayedProcessing', 'windowBuffer', 'maxSize', 'ttl', 'retentionSeconds',
    'completedRetentionSeconds', 'deadLetterQueue', 'retentionEnabled', 'maxWaitTimeSeconds')
  return {
    leaseTime = tonumber(v[1]) or 300,
    retryLimit = tonumber(v[2]) or 3,
    retryDelay = tonumber(v[3]) or 0,
    delayedProcessing = tonumber(v[4]) or 0,
    windowBuffer = tonumber(v[5]) or 0,
    maxSize = tonumber(v[6]) or 0,
    ttl = tonumber(v[7]) or 0,
    retentionSeconds = tonumber(v[8]) or 0,
    completedRetentionSeconds = tonumber(v[9]) or 0,
    deadLetterQueue = v[10] ~= 'false',
    retentionEnabled = v[11] == 'true',
    maxWaitTimeSeconds = tonumber(v[12]) or 0,
  }
end

-- docs/broker.md "Payload encryption": with encryptionEnabled every stored payload is an envelope
-- the node sealed (its text starts with this). A clear one comes from a node that has not read
-- the option since it was turned on: refused, so that node re-reads it and seals.
local SEALED_PREFIX = '{"$herald.enc":'
local function clear_on_sealed_queue(base, items)
  if redis.call('HGET', base .. 'cfg', 'encryptionEnabled') ~= 'true' then return false end
  for _, item in ipairs(items) do
    if string.sub(item[6], 1, #SEALED_PREFIX) ~= SEALED_PREFIX then return true end
  end
  return false
end

local function ckey(base, p, g) return base .. 'c:' .. p .. ':' .. g end

local function group_start(base, g)
  return redis.call('HGET', base .. 'groups', g) or '0-0'
end

local function position(base, p, g)
  return redis.call('HGET', ckey(base, p, g), 'pos') or group_start(base, g)
end

-- Moves pos over ids already resolved, so the resolved set stays small.
local function advance(base, p, g)
  local ck = ckey(base, p, g)
  local aset = base .. 'a:' .. p .. ':' .. g
  local pending = redis.call('SCARD', aset)
  if pending == 0 then return end
  local pos = position(base, p, g)
  local moved = false
  while true do
    -- pos can move past at most |resolved| entries: read no more than that (in-order acks: 1).
    local entries = redis.call('XRANGE', base .. 's:' .. p, '(' .. pos, '+', 'COUNT', math.min(pending, 64))
    if #entries == 0 then break end
    local stop = false
    for _, e in ipairs(entries) do
      if redis.call('SREM', aset, e[1]) == 1 then
        pos = e[1]; moved = true
        redis.call('HDEL', base .. 'rc:' .. p .. ':' .. g, e[1])
      else
        stop = true
        break
      end
    end
    if stop then break end
  end
  if moved then redis.call('HSET', ck, 'pos', pos) end
end

local function field(e, name)
  local f = e[2]
  for i = 1, #f, 2 do
    if f[i] == name then return f[i + 1] end
  end
  return false
end

-- m, t, tr, d, s of a message entry: positional when written by push_items (the usual
-- layout), by name otherwise.
local function message_fields(e)
  local f = e[2]
  if f[1] == 'm' and f[3] == 't' and f[5] == 'tr' and f[7] == 'd' and f[9] == 's' then
    return f[2], f[4], f[6], f[8], f[10]
  end
  return field(e, 'm') or '', field(e, 't') or '', field(e, 'tr') or '', field(e, 'd') or 'null',
    field(e, 's') or ''
end

local function dead_letter(base, p, g, id, err, attempts, now)
  local e = redis.call('XRANGE', base .. 's:' .. p, id, id)
  if #e == 0 then return end
  local m = e[1]
  redis.call('XADD', base .. 'dlq', '*', 'p', p, 'g', g, 'sid', id,
    'm', field(m, 'm') or '', 't', field(m, 't') or '', 'tr', field(m, 'tr') or '',
    'd', field(m, 'd') or 'null', 's', field(m, 's') or '', 'err', err or '',
    'rc', attempts, 'at', fmt(now))
  redis.call('HINCRBY', base .. 'stats', 'dlq', 1)
end

-- Marks one message resolved for group g (acked, dead-lettered or expired).
local function resolve(base, p, g, id)
  if redis.call('SADD', base .. 'a:' .. p .. ':' .. g, id) == 1 then
    redis.call('HINCRBY', base .. 'stats', 'resolved:' .. g, 1)
    redis.call('HINCRBY', base .. 'stats', 'pending:' .. g, -1)
  end
end

-- Number of entries of partition p after position `after` (reads them: for rare operations,
-- group creation and seek, never on the push/pop/ack path).
local function count_after(base, p, after)
  local n = 0
  local from = '(' .. after
  while true do
    local e = redis.call('XRANGE', base .. 's:' .. p, from, '+', 'COUNT', 1000)
    n = n + #e
    if #e < 1000 then return n end
    from = '(' .. e[#e][1]
  end
end

-- Entries of partition p group g has not resolved: after its position, not in its resolved set.
local function unresolved_in(base, p, g)
  return count_after(base, p, position(base, p, g)) - redis.call('SCARD', base .. 'a:' .. p .. ':' .. g)
end

-- Registers group g with its subscription start (HSETNX: an existing group keeps its own) and
-- counts its backlog, pending:<g>. Returns true when the group is new.
local function create_group(base, g, start)
  -- The first group of a queue: every group is counted from its creation on (see ensure_backlog).
  if redis.call('HLEN', base .. 'groups') == 0 then redis.call('HSETNX', base .. 'stats', 'backlog', '1') end
  if redis.call('HSETNX', base .. 'groups', g, start) == 0 then return false end
  local n
  if start == '0-0' then
    n = tonumber(redis.call('HGET', base .. 'stats', 'size') or '0')
  else
    n = 0
    for _, p in ipairs(redis.call('HKEYS', base .. 'parts')) do n = n + count_after(base, p, start) end
  end
  redis.call('HSET', base .. 'stats', 'pending:' .. g, n)
  return true
end

-- An entry deleted from partition p (one message deleted or requeued): each group that had
-- not resolved it has one message less pending; one that had, forgets it.
local function forget_entry(base, p, id)
  for _, g in ipairs(redis.call('HKEYS', base .. 'groups')) do
    if id_cmp(id, position(base, p, g)) > 0 and redis.call('SREM', base .. 'a:' .. p .. ':' .. g, id) == 0 then
      redis.call('HINCRBY', base .. 'stats', 'pending:' .. g, -1)
    end
  end
end

--[[
  The pending:<g> counters are exact from a group's creation on (every script that resolves,
  deletes or moves a position keeps them); `backlog` says every group of the queue was counted.
  A queue whose groups were created by an earlier release has no such mark: its groups are
  counted once, here, from the streams (idempotent: a resend counts the same).
]]
local function ensure_backlog(base, groups)
  if #groups == 0 or redis.call('HSETNX', base .. 'stats', 'backlog', '1') == 0 then return end
  local parts = redis.call('HKEYS', base .. 'parts')
  for _, g in ipairs(groups) do
    local n = 0
    for _, p in ipairs(parts) do n = n + unresolved_in(base, p, g) end
    redis.call('HSET', base .. 'stats', 'pending:' .. g, n)
  end
end

--[[
  What maxSize is compared with (docs/broker.md "Queue options"): the backlog of the slowest
  consumer group, i.e. the retained messages it has not resolved; before any group exists,
  every retained message. Resolved messages kept by retention rules never count.
]]
local function queue_depth(base, groups)
  if #groups == 0 then return tonumber(redis.call('HGET', base .. 'stats', 'size') or '0') end
  ensure_backlog(base, groups)
  local fields = {}
  for i, g in ipairs(groups) do fields[i] = 'pending:' .. g end
  local depth = 0
  for s = 1, #fields, 1000 do
    for _, v in ipairs(redis.call('HMGET', base .. 'stats', unpack(fields, s, math.min(s + 999, #fields)))) do
      local n = tonumber(v or '0')
      if n > depth then depth = n end
    end
  end
  return depth
end

local function release_lease(base, p, g, lease)
  redis.call('HDEL', ckey(base, p, g), 'lease', 'exp', 'upto', 'n')
  redis.call('DEL', base .. 'r:' .. p .. ':' .. g)
  redis.call('ZREM', base .. 'leases', p .. '\n' .. g)
  if lease then redis.call('SREM', base .. 'lease:' .. lease, p .. '\n' .. g) end
end

local function has_unresolved(base, p, g)
  local pos = position(base, p, g)
  local aset = base .. 'a:' .. p .. ':' .. g
  local from = '(' .. pos
  -- Nothing resolved ahead of pos (the usual case): any entry after pos is unresolved.
  if redis.call('SCARD', aset) == 0 then
    return #redis.call('XRANGE', base .. 's:' .. p, from, '+', 'COUNT', 1) > 0
  end
  while true do
    local entries = redis.call('XRANGE', base .. 's:' .. p, from, '+', 'COUNT', 32)
    if #entries == 0 then return false end
    for _, e in ipairs(entries) do
      if redis.call('SISMEMBER', aset, e[1]) == 0 then return true end
      from = '(' .. e[1]
    end
  end
end

-- After a lease ends: schedule the partition for group g, or drop it from the ready set.
local function reschedule(base, p, g, now)
  local nb = tonumber(redis.call('HGET', ckey(base, p, g), 'nb') or '0')
  if has_unresolved(base, p, g) then
    local at = now
    if nb > now then at = nb end
    redis.call('ZADD', base .. 'ready:' .. g, at, p)
  else
    redis.call('ZREM', base .. 'ready:' .. g, p)
  end
end

-- Counts one failed attempt for a message; dead-letters it past retryLimit.
-- Returns true when dead-lettered.
local function fail_attempt(base, p, g, id, err, cfg, now)
  local attempts = redis.call('HINCRBY', base .. 'rc:' .. p .. ':' .. g, id, 1)
  if attempts > cfg.retryLimit then
    if cfg.deadLetterQueue then dead_letter(base, p, g, id, err, attempts, now) end
    resolve(base, p, g, id)
    return true
  end
  if cfg.retryDelay > 0 then
    redis.call('HSET', ckey(base, p, g), 'nb', fmt(now + cfg.retryDelay))
  end
  return false
end

-- An expired lease: every message of the batch left unanswered counts one failed attempt
-- (broker.md: a lease expiry is an attempt), then the partition is rescheduled.
local function expire_lease(base, p, g, cfg, now)
  local ck = ckey(base, p, g)
  local st = redis.call('HMGET', ck, 'lease', 'upto')
  if not st[1] then return 0 end
  local pos = position(base, p, g)
  local aset = base .. 'a:' .. p .. ':' .. g
  local rset = base .. 'r:' .. p .. ':' .. g
  if st[2] then
    local entries = redis.call('XRANGE', base .. 's:' .. p, '(' .. pos, st[2])
    for _, e in ipairs(entries) do
      if redis.call('SISMEMBER', aset, e[1]) == 0 and redis.call('SISMEMBER', rset, e[1]) == 0 then
        fail_attempt(base, p, g, e[1], 'Lease expired', cfg, now)
      end
    end
  end
  redis.call('HINCRBY', base .. 'stats', 'expiries', 1)
  release_lease(base, p, g, st[1])
  advance(base, p, g)
  reschedule(base, p, g, now)
  return 1
end

-- LT: an earlier due time wins, a later one never postpones work already due.
local function schedule_trim(base, p, at)
  redis.call('ZADD', base .. 'trim', 'LT', at, p)
end

-- Seconds after its creation when a message may next be removed whatever its consumption
-- (retentionSeconds when retention is enabled, ttl, maxWaitTimeSeconds), 0 when never.
local function age_horizon(cfg)
  local horizon = 0
  local function take(seconds)
    if seconds > 0 and (horizon == 0 or seconds < horizon) then horizon = seconds end
  end
  if cfg.retentionEnabled then take(cfg.retentionSeconds) end
  take(cfg.ttl)
  take(cfg.maxWaitTimeSeconds)
  return horizon
end

-- When an ack makes messages deletable: completedRetentionSeconds later, only when retention
-- is enabled with a window above 0 (Queen's rule); nil otherwise.
local function completed_trim_at(cfg, now)
  if cfg.retentionEnabled and cfg.completedRetentionSeconds > 0 then
    return now + cfg.completedRetentionSeconds * 1000
  end
  return nil
end

-- Appends the items of one queue. items: list of {p, pid, txn, mid, trace, data, sub}.
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
    local list = by_partition[it[1]]
    if not list then
      list = {}
      by_partition[it[1]] = list
      partitions[#partitions + 1] = it[1]
    end
    list[#list + 1] = i
  end
  local stored = {}
  for _, p in ipairs(partitions) do
    local list = by_partition[p]
    local txns = {}
    for j, i in ipairs(list) do txns[j] = items[i][3] end
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
    local key = it[1] .. '\n' .. it[3]
    local existing = seen[key]
    if not existing then
      local d = stored[i]
      if d then
        existing = string.match(d, ' (.*)$')
        if existing == it[4] then again[i] = true end
      end
    end
    if again[i] then
      seen[key] = existing
      results[i] = { 1, existing }
    elseif existing then
      results[i] = { 0, existing }
    else
      seen[key] = it[4]
      fresh = fresh + 1
      results[i] = { 1, it[4] }
    end
  end
  local groups = redis.call('HKEYS', base .. 'groups')
  if cfg.maxSize > 0 then
    local depth = queue_depth(base, groups)
    if depth + fresh > cfg.maxSize then return nil, depth end
  end
  local touched = {}
  local dedup_writes = {}
  for i, it in ipairs(items) do
    if results[i][1] == 1 and not again[i] then
      local p = it[1]
      local id = redis.call('XADD', base .. 's:' .. p, '*', 'm', it[4], 't', it[3], 'tr', it[5],
        'd', it[6], 's', it[7])
      local writes = dedup_writes[p]
      if not writes then
        writes = {}
        dedup_writes[p] = writes
      end
      writes[#writes + 1] = it[3]
      writes[#writes + 1] = id .. ' ' .. it[4]
      if not touched[p] then
        touched[p] = true
        redis.call('HSET', base .. 'parts', p, it[2])
        redis.call('HSET', base .. 'pids', it[2], p)
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

-- What an ack asks for, for repeat detection: completed and success are one answer, failed
-- and retry another; dlq its own.
local function ack_class(status)
  if status == 'completed' or status == 'success' then return 'done' end
  if status == 'dlq' then return 'dlq' end
  return 'failed'
end

-- The field of an ack's answer under its lease: the message as the client names it
-- (partition id, transactionId), so a retry is recognised even after retention removed the
-- message (completedRetentionSeconds 0).
local function answer_field(p, txn)
  return p .. '\n' .. txn
end

-- The answer recorded under lease for the ack of (p, txn) (false if none): 'done:0', 'failed:1'...
local function ack_memo(base, lease, p, txn)
  if lease == '' then return false end
  return redis.call('HGET', base .. 'la:' .. lease, answer_field(p, txn))
end

-- How long (ms) after the last ack under a lease its answers are kept: a resend comes within
-- ms, a client retry after a reset within seconds; a fixed window keeps the memory at about
-- (leases acked per second) x 60 small hashes, whatever the leaseTime.
local ANSWER_MEMORY_MS = 60000

--[[
  Whether an ack repeats one already applied (a client retry, or ioredis resending a script
  whose reply was lost). Returns false when it does not, else err (nil: a repeat, answered as
  a success flagged `repeat`) and dlq (what the first answer reported). With a lease, the
  answer recorded under it decides (same status class: repeat; another: refused); without
  one the lease check follows, so a stale consumer is still told its lease expired. Without a
  lease, a resolved message repeats a completed/success ack (other statuses cannot be told
  apart from a conflicting answer and fall through to 'Message already acknowledged').
]]
local function ack_repeat(lease, memo, status, resolved)
  if memo then
    local class, dlq = string.match(memo, '^(%a+):(%d)$')
    if class == ack_class(status) then return true, nil, tonumber(dlq) end
    return true, 'Message already acknowledged', 0
  end
  if lease == '' and resolved and ack_class(status) == 'done' then return true, nil, 0 end
  return false
end

--[[
  The rules of one ack, before anything is written (ack_many applies them to every ack, the
  transaction script checks its acks with them through check_ack). Returns nil when the ack
  is to be applied, else its answer { ok, err, released, dlq, repeat }: a refusal, or a repeat
  of an ack already applied. memo: the answer recorded under its lease (false if none); found:
  the message is retained; resolved: group g resolved it; held, exp: the lease group g holds
  on the partition and its expiry.
]]
local function ack_verdict(lease, status, memo, found, resolved, held, exp, now)
  if not found then
    -- Retention may have removed the message since the answer was recorded.
    if not memo then return { 0, 'Message not found', 0, 0, 0 } end
    resolved = true
  end
  local seen, err, dlq = ack_repeat(lease, memo, status, resolved)
  if seen then
    if err then return { 0, err, 0, 0, 0 } end
    return { 1, '', 0, dlq, 1 }
  end
  if lease ~= '' and (held ~= lease or exp <= now) then return { 0, 'Invalid or expired lease', 0, 0, 0 } end
  if resolved then return { 0, 'Message already acknowledged', 0, 0, 0 } end
  return nil
end

-- Checks an ack without changing anything (ack_verdict on the stored state). Returns id (the
-- transactionId when retention removed the message), or nil and the refusal.
local function check_ack(base, p, g, txn, lease, status, now)
  local memo = ack_memo(base, lease, p, txn)
  local d = redis.call('HGET', base .. 'd:' .. p, txn)
  local id, resolved, st = txn, false, {}
  if d then
    id = string.match(d, '^(%S+)')
    local pos = position(base, p, g)
    resolved = id_cmp(id, pos) <= 0 or redis.call('SISMEMBER', base .. 'a:' .. p .. ':' .. g, id) == 1
    st = redis.call('HMGET', ckey(base, p, g), 'lease', 'exp')
  end
  local verdict = ack_verdict(lease, status, memo, d, resolved, st[1] or false, tonumber(st[2] or '0'), now)
  if verdict and verdict[1] == 0 then return nil, verdict[2] end
  return id, nil
end

-- Calls `command key members...` in chunks (Lua's unpack has a bounded stack).
local function call_chunked(command, key, members)
  for s = 1, #members, 1000 do
    redis.call(command, key, unpack(members, s, math.min(s + 999, #members)))
  end
end

-- Moves one consumer state's pos over resolved ids, once for a whole ack batch: entries
-- resolved in this batch (st.resolved) or before it (the set a:, only read when not empty).
local function advance_state(base, st)
  local pending = st.acount + st.fresh
  if pending == 0 then return end
  local stream = base .. 's:' .. st.p
  local pos = st.pos
  local from = '(' .. pos
  local passed, srem = {}, {}
  while pending > 0 do
    -- pos moves over at most `pending` entries: read no more than that.
    local entries = redis.call('XRANGE', stream, from, '+', 'COUNT', math.min(pending, 256))
    if #entries == 0 then break end
    local stop = false
    for _, e in ipairs(entries) do
      local id = e[1]
      if st.resolved[id] then
        if st.inset[id] then srem[#srem + 1] = id end
      elseif st.acount > 0 and redis.call('SISMEMBER', st.aset, id) == 1 then
        srem[#srem + 1] = id
      else
        stop = true
        break
      end
      pos = id
      passed[#passed + 1] = id
      pending = pending - 1
    end
    if stop then break end
    from = '(' .. pos
  end
  if #passed == 0 then return end
  st.pos = pos
  st.passed = {}
  for _, id in ipairs(passed) do st.passed[id] = true end
  call_chunked('SREM', st.aset, srem)
  local rc = base .. 'rc:' .. st.p .. ':' .. st.g
  if redis.call('EXISTS', rc) == 1 then call_chunked('HDEL', rc, passed) end
  redis.call('HSET', st.ck, 'pos', pos)
end

--[[
  Applies acks of one queue in order: the one ack implementation (lua/ack-1.lua calls it with
  a batch, lua/transaction-0.lua with each ack of a transaction). ack_verdict decides each
  ack; each (partition, group) state is read once and written once, so an in-order batch
  costs a few Redis calls per (partition, group) plus one XRANGE per 256 acks (one ack at a
  time cost ~18 calls, the top cost of pop+ack in the profile). Resolved ids that pos moves
  over never enter the a: set; the a: and r: sets are only read when they were not empty
  before the batch. acks: list of {p, g, txn, status, lease, err}. Returns per ack
  { ok (1/0), error or '', leaseReleased (1/0), dlq (1/0), repeat (1/0) }.
]]
local function ack_many(base, acks, cfg, now)
  local out = {}
  -- Dedup lookups (transactionId -> stream id), one HMGET per partition.
  local txns = {}
  for _, a in ipairs(acks) do
    local list = txns[a.p]
    if not list then list = {}; txns[a.p] = list end
    list[#list + 1] = a.txn
  end
  local dedup = {}
  for p, list in pairs(txns) do
    local map = {}
    for s = 1, #list, 1000 do
      local values = redis.call('HMGET', base .. 'd:' .. p, unpack(list, s, math.min(s + 999, #list)))
      for j, v in ipairs(values) do map[list[s + j - 1]] = v end
    end
    dedup[p] = map
  end

  local states, order, trims = {}, {}, {}
  -- Answers under each lease: read once per (lease, id), written once per lease.
  local memos, memo_writes, memo_order = {}, {}, {}
  local function state_of(p, g)
    local key = p .. '\n' .. g
    local st = states[key]
    if st then return st end
    local ck = ckey(base, p, g)
    local v = redis.call('HMGET', ck, 'lease', 'exp', 'upto', 'n', 'pos')
    st = {
      p = p, g = g, ck = ck,
      lease = v[1], exp = tonumber(v[2] or '0'), upto = v[3], n = tonumber(v[4] or '0'),
      pos = v[5] or group_start(base, g),
      aset = base .. 'a:' .. p .. ':' .. g, rset = base .. 'r:' .. p .. ':' .. g,
      resolved = {}, inset = {}, fresh = 0, fresh_ids = {},
      answered = nil, rcount = 0, rnew = {}, rids = {},
      reschedule = false,
    }
    st.acount = redis.call('SCARD', st.aset)
    states[key] = st
    order[#order + 1] = st
    return st
  end

  for i, a in ipairs(acks) do
    local d = dedup[a.p][a.txn]
    local field = answer_field(a.p, a.txn)
    local memo = false
    if a.lease ~= '' then
      local answers = memos[a.lease]
      if not answers then answers = {}; memos[a.lease] = answers end
      memo = answers[field]
      if memo == nil then
        memo = ack_memo(base, a.lease, a.p, a.txn)
        answers[field] = memo
      end
    end
    local st, id, resolved = nil, nil, false
    if d then
      id = string.sub(d, 1, string.find(d, ' ', 1, true) - 1)
      st = state_of(a.p, a.g)
      resolved = id_cmp(id, st.pos) <= 0 or st.resolved[id]
        or (st.acount > 0 and redis.call('SISMEMBER', st.aset, id) == 1)
    end
    local verdict = ack_verdict(a.lease, a.status, memo, d, resolved, st and st.lease, st and st.exp, now)
    if verdict then
      out[i] = verdict
    else
      local had_lease = st.lease
      local leased = st.lease and st.exp > now and st.upto and id_cmp(id, st.upto) <= 0
      local dlq = 0
      if a.status == 'completed' or a.status == 'success' then
        st.resolved[id] = true
        st.fresh = st.fresh + 1
        st.fresh_ids[#st.fresh_ids + 1] = id
      elseif a.status == 'dlq' then
        if cfg.deadLetterQueue then
          dead_letter(base, a.p, a.g, id, a.err,
            tonumber(redis.call('HGET', base .. 'rc:' .. a.p .. ':' .. a.g, id) or '0'), now)
        end
        resolve(base, a.p, a.g, id)
        st.resolved[id] = true
        st.inset[id] = true
        st.acount = st.acount + 1
        dlq = 1
      elseif fail_attempt(base, a.p, a.g, id, a.err, cfg, now) then
        st.resolved[id] = true
        st.inset[id] = true
        st.acount = st.acount + 1
        dlq = 1
      end
      local released = 0
      if leased then
        if st.answered == nil then
          st.rcount = redis.call('SCARD', st.rset)
          st.answered = st.rcount
        end
        if not st.rnew[id] and (st.rcount == 0 or redis.call('SISMEMBER', st.rset, id) == 0) then
          st.rnew[id] = true
          st.rids[#st.rids + 1] = id
          st.answered = st.answered + 1
        end
        if st.answered >= st.n then
          release_lease(base, a.p, a.g, st.lease)
          st.lease = false
          st.rids = {}
          released = 1
        end
      end
      if released == 1 or not had_lease then st.reschedule = true end
      trims[a.p] = true
      if a.lease ~= '' then
        local answer = ack_class(a.status) .. ':' .. dlq
        memos[a.lease][field] = answer
        local w = memo_writes[a.lease]
        if not w then
          w = { fields = {} }
          memo_writes[a.lease] = w
          memo_order[#memo_order + 1] = a.lease
        end
        w.fields[#w.fields + 1] = field
        w.fields[#w.fields + 1] = answer
      end
      out[i] = { 1, '', released, dlq, 0 }
    end
  end

  for _, st in ipairs(order) do
    advance_state(base, st)
    -- Resolved in this batch and not passed by pos: they join the a: set (and count once).
    local keep = {}
    for _, id in ipairs(st.fresh_ids) do
      if not (st.passed and st.passed[id]) then keep[#keep + 1] = id end
    end
    call_chunked('SADD', st.aset, keep)
    if st.fresh > 0 then
      redis.call('HINCRBY', base .. 'stats', 'resolved:' .. st.g, st.fresh)
      redis.call('HINCRBY', base .. 'stats', 'pending:' .. st.g, -st.fresh)
    end
    if st.lease then call_chunked('SADD', st.rset, st.rids) end
    if st.reschedule then reschedule(base, st.p, st.g, now) end
  end
  for _, lease in ipairs(memo_order) do
    local w = memo_writes[lease]
    call_chunked('HSET', base .. 'la:' .. lease, w.fields)
    redis.call('PEXPIRE', base .. 'la:' .. lease, ANSWER_MEMORY_MS)
  end
  local trim_at = completed_trim_at(cfg, now)
  if trim_at then
    for p in pairs(trims) do schedule_trim(base, p, trim_at) end
  end
  return out
end
