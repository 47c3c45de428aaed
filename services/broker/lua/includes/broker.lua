--[[
  Shared functions, inlined by the script loader where a script says `--@include broker`; this
  file holds the key layout, positions, resolution and backlog counters, and includes the rest
  in order (each may use what comes before it): the clock (now_ms, new_entry_id: shared/redis
  lua/clock-*.lua, chosen when the scripts are loaded), trim.lua (retention schedule), leases.lua
  (release, reschedule, failed attempts, expiry: an expiry that dead-letters schedules a trim),
  push.lua (push_items), ack.lua (ack_many, the one ack implementation, and check_ack).

  Key discipline (issue #12; docs/broker-topologies.md "Redis topologies"): a script's KEYS[1] is the
  queue's base `<prefix>{<queue>}:` (or `<prefix>{<namespace>}:<queue>:` with
  BROKER_REDIS_SLOT_GROUP=namespace), and every key it touches is a declared KEYS[i] with a
  suffix appended: never a key built from ARGV or a literal. Declaring every key literally is
  impossible: partition and group names are discovered inside the scripts (wildcard pop, ack
  batches, retention read `parts`, `groups`, `ready:<g>`), so a key per (partition, group) cannot
  be listed before the call. A suffix keeps the declared key's hash tag, so every such key is in
  the slot the call was routed to. The functions below take that base as their `base` parameter;
  services/broker/test/lua-keys.test.ts follows every key back to KEYS (a name reused for a
  non-key value fails it: `chunked_key`, `requeue_memo` are named for that).

  Key layout under one queue's base (every key of a queue shares one hash tag, so every script
  touches one Redis Cluster slot). Partition and group names arrive URI-encoded (no ':' inside),
  so the keys below are unambiguous:
    cfg                 hash   queue options, namespace, task, createdAt
    parts / pids        hash   partition -> partitionId / partitionId -> partition
    groups              hash   group -> start position for partitions it has never read
    unreg               set    groups that acks gave partition state without registering them
                               (an ack needs no registered group): deletes clear their keys too
    ready:<g>           zset   partition -> earliest time (ms) group g may find work there
                               (now: deliverable; lease expiry; retry delay; delayed message)
    leases              zset   "<p>\n<g>" -> lease expiry (ms), for the lease sweep
    lease:<leaseId>     set    "<p>\n<g>" held by one lease (expires with the lease)
    s:<p>               stream the partition's messages (id = time-ordered stream id)
    d:<p>               hash   transactionId -> "<streamId> <messageId>" (dedup, while retained)
    c:<p>:<g>           hash   pos (last position with everything before resolved), lease,
                               exp, upto (last id of the leased batch), n (batch size),
                               from ('<leaseId> <pos>': the position a pop took the batch after;
                               left behind when the lease ends, only read while its lease is
                               the current one), nb (not-before: retry delay)
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

--@include clock

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

-- queue_config read once per queue in one script run (a transaction or a streams cycle reads a
-- queue's options in its check phase and again to apply).
local configs_read = {}
local function config_of(base)
  if not configs_read[base] then configs_read[base] = queue_config(base) end
  return configs_read[base]
end

-- docs/broker-encryption.md "Payload encryption": with encryptionEnabled every stored payload is an envelope
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
  redis.call('XADD', base .. 'dlq', new_entry_id(), 'p', p, 'g', g, 'sid', id,
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
  redis.call('SREM', base .. 'unreg', g)
  -- A partition where acks without a lease already resolved messages for g (an ack needs no
  -- registered group) is counted from that state, not from the start (issue #11, differential test).
  local n = 0
  for _, p in ipairs(redis.call('HKEYS', base .. 'parts')) do
    local aset = base .. 'a:' .. p .. ':' .. g
    if redis.call('EXISTS', ckey(base, p, g), aset) > 0 then
      -- forget_entry visits registered groups only: an entry deleted or requeued while g was not
      -- one is still in its resolved set, and would be subtracted from what g has not resolved.
      for _, id in ipairs(redis.call('SMEMBERS', aset)) do
        if #redis.call('XRANGE', base .. 's:' .. p, id, id) == 0 then redis.call('SREM', aset, id) end
      end
      n = n + unresolved_in(base, p, g)
    elseif start == '0-0' then
      n = n + redis.call('XLEN', base .. 's:' .. p)
    else
      n = n + count_after(base, p, start)
    end
  end
  redis.call('HSET', base .. 'stats', 'pending:' .. g, n)
  return true
end

-- An entry deleted from partition p (one message deleted or requeued): each group that had
-- not resolved it has one message less pending; one that had, forgets it.
local function forget_entry(base, p, id)
  for _, g in ipairs(redis.call('HKEYS', base .. 'groups')) do
    if id_cmp(id, position(base, p, g)) > 0 then
      if redis.call('SREM', base .. 'a:' .. p .. ':' .. g, id) == 0 then
        redis.call('HINCRBY', base .. 'stats', 'pending:' .. g, -1)
      end
      -- What g resolved right behind the entry is now next to its position: move over it.
      advance(base, p, g)
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
  What maxSize is compared with (docs/broker-api.md "Queue options"): the backlog of the slowest
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

--@include trim
--@include leases
--@include push
--@include ack
