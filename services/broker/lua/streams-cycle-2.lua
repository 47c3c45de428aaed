--[[
  Commits one streams cycle (docs/broker-streams.md, "Streams"): state upserts/deletes of one
  (query, partition) shard, pushes to sink queues and the ack of the source batch, all or
  nothing: every check runs first, nothing is written unless all pass. Where slots are
  enforced (Redis Cluster) every key below shares one hash tag: pushes to sink queues in other
  slots are the shares of a transaction across slots, prepared before this runs and applied
  after it committed (redis/transactions.ts, docs/broker-outbox.md).
  KEYS[1]   queryBase: <prefix>streams:{<id>}: or, where slots are enforced,
            <home queue base>~streams:<id>:. Generation g > 0 of the state lives under
            KEYS[1] .. 'g<g>:', generation 0 under KEYS[1]; KEYS[1] .. 'gen' is the lowest live
            generation (streams-drop-2.lua); KEYS[1] .. 'cy:<cycle id>' the committed answers
  KEYS[2]   stats: the stats hash: fields r:<field>, b:<field> (rows, bytes of the generation)
  KEYS[3..] queues: the base of each queue the cycle pushes to or acks, once each (the file
            name's 2 is the least number of keys: one more per queue touched)
  ARGV[1]   cycleId: SHA-256 of the request's canonical body
  ARGV[2]   statsField: the query id, '<id>:<g>' for a generation g > 0
  ARGV[3]   generation: the generation the node read from the registry
  ARGV[4]   shard: the source partition id
  ARGV[5]   memory: seconds a committed answer is kept
  ARGV[6]   maxRows: max rows of the shard
  ARGV[7]   maxBytes: max bytes of the shard
  ARGV[8..] operations: n state ops, then n x { 'u'|'d', key, value JSON ('' for 'd') },
            then m pushes, then m x { key index of the sink queue's base, namespace, task,
            queue, partition (URI-encoded), partitionId, transactionId, messageId, record
            (includes/message-fields.lua) },
            then '1' + ack { key index of the source queue's base, partition (URI-encoded),
            group (URI-encoded), transactionId, leaseId ('' = none), status
            (completed|success|failed|dlq), count, error, release ('1'|'0') },
            or '0' when the cycle acks nothing,
            then '1' + across slots { transactionId, shares (JSON list of the other slots'
            shares, each the list of its queues), memory (seconds the decision is kept), key index
            of the home queue's base } when the cycle pushes to queues in other slots (prepared
            before as shares of a transaction across slots, redis/transactions.ts), or '0'
  Returns JSON text: {"stale":true} (the query was reset since the node read its generation:
  nothing applied, the node reads the registry again), {"ok":false,"error":...} (nothing
  applied), {"clear":<queue>} (a sink queue has encryptionEnabled and a push to it is not
  sealed: the node read the option before it was turned on; nothing applied, the node seals
  and sends the cycle again), or {"ok":true,"applied":n,"pushes":[...],"ack":{...}|false,
  "intents":n,"txid":...,"shares":[...]} (intents: outbox intents recorded, includes/outbox.lua;
  txid and shares: the transaction across slots this cycle committed, absent without one).
  Across slots, the commit also writes the decision <home base>txd:<transactionId> and the apply
  intent of the shares in the home queue's outbox (as transaction-1.lua; recovery,
  txn-decide-1.lua, reads the decision); a decision of 'aborted' (recovery timed the
  transaction out first) refuses the cycle.
  Resend-safe: per request id (shared/redis/README.md). A committed cycle's answer is stored under
  its cycle id (a hash of the request body) for ARGV[5] seconds; a second run, a resent script or
  a client retrying the same body, finds it and answers it without applying anything again (its
  txid tells the node which transaction's shares hold the cycle's other pushes: its own, prepared
  again, are released). A refusal ("ok":false, "clear", "stale") writes nothing, so a resend
  refuses again.
]]
--@include advance
--@include ckey
--@include clear-on-sealed-queue
--@include clock
--@include config-of
--@include dead-letter
--@include each-entry
--@include fmt
--@include id-cmp
--@include position
--@include push-items
--@include queue-depth
--@include read-push-item
--@include release-lease
--@include reschedule
--@include resolve
--@include schedule-trim

local qbase, stats = KEYS[1], KEYS[2]
local cycle_id, field, gen, shard = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local memory, max_rows, max_bytes = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local memo_key = qbase .. 'cy:' .. cycle_id

local memo = redis.call('GET', memo_key)
if memo then return memo end
if gen < tonumber(redis.call('GET', qbase .. 'gen') or '0') then return cjson.encode({ stale = true }) end
local sbase = qbase
if gen > 0 then sbase = qbase .. 'g' .. gen .. ':' end

local i = 8
local ops = {}
for _ = 1, tonumber(ARGV[i]) do
  ops[#ops + 1] = { kind = ARGV[i + 1], key = ARGV[i + 2], value = ARGV[i + 3] }
  i = i + 3
end
i = i + 1
local pushes = {}
for _ = 1, tonumber(ARGV[i]) do
  pushes[#pushes + 1] = { key = tonumber(ARGV[i + 1]), base = KEYS[tonumber(ARGV[i + 1])], namespace = ARGV[i + 2], task = ARGV[i + 3],
    queue = ARGV[i + 4],
    item = read_push_item(ARGV, i + 5) }
  i = i + 4 + PUSH_ITEM_ARGS
end
i = i + 1
local ack = false
if ARGV[i] == '1' then
  ack = { base = KEYS[tonumber(ARGV[i + 1])], p = ARGV[i + 2], g = ARGV[i + 3], txn = ARGV[i + 4],
    lease = ARGV[i + 5], status = ARGV[i + 6], count = tonumber(ARGV[i + 7]), err = ARGV[i + 8],
    release = ARGV[i + 9] == '1' }
  i = i + 10
else
  i = i + 1
end
-- Across slots: the home queue's base holds the decision and the apply intent.
-- (A name bound to keys only: the key check, test/lua-keys.ts, follows names.)
local across = ARGV[i] == '1'
local home = KEYS[1]
if across then home = KEYS[tonumber(ARGV[i + 4])] end
local txid, shares, decision_memory = ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
local now = now_ms()
local function fail(message) return cjson.encode({ ok = false, error = message }) end
local decided = across and redis.call('GET', home .. 'txd:' .. txid)
if decided == 'aborted' then return fail('Transaction timed out before it committed (nothing applied)') end

-- Check phase ------------------------------------------------------------------------------
local ack_id
if ack then
  local d = redis.call('HGET', ack.base .. 'd:' .. ack.p, ack.txn)
  if not d then return fail('Message not found') end
  ack_id = string.match(d, '^(%S+)')
  if ack.lease ~= '' then
    local st = redis.call('HMGET', ckey(ack.base, ack.p, ack.g), 'lease', 'exp', 'upto')
    if st[1] ~= ack.lease or tonumber(st[2] or '0') <= now then return fail('Invalid or expired lease') end
    if id_cmp(ack_id, st[3]) > 0 then return fail('Message is not part of the lease') end
  end
  if id_cmp(ack_id, position(ack.base, ack.p, ack.g)) <= 0
    or redis.call('SISMEMBER', ack.base .. 'a:' .. ack.p .. ':' .. ack.g, ack_id) == 1 then
    return fail('Message already acknowledged')
  end
end

-- The shard after the ops: rows and bytes (key + value) against the bounds.
local shard_key = sbase .. 's:' .. shard
local function row_bytes(key, stored)
  if not stored then return 0, false end
  return #key + #stored - (string.find(stored, ' ', 1, true) or 0), true
end
local final = {}
local rows = redis.call('HLEN', shard_key)
local bytes = tonumber(redis.call('HGET', sbase .. 'b', shard) or '0')
local rows_before, bytes_before = rows, bytes
for _, op in ipairs(ops) do
  local known = final[op.key]
  local size, present
  if known then
    size, present = known.size, known.present
  else
    size, present = row_bytes(op.key, redis.call('HGET', shard_key, op.key))
  end
  if present then rows = rows - 1; bytes = bytes - size end
  if op.kind == 'u' then
    final[op.key] = { size = #op.key + #op.value, present = true }
    rows = rows + 1; bytes = bytes + #op.key + #op.value
  else
    final[op.key] = { size = 0, present = false }
  end
end
if rows > rows_before and rows > max_rows then
  return fail('state shard is full: ' .. rows .. ' rows (max ' .. max_rows .. ')')
end
if bytes > bytes_before and bytes > max_bytes then
  return fail('state shard is full: ' .. bytes .. ' bytes (max ' .. max_bytes .. ')')
end

-- As push-1.lua: storage, not the node's cached view of the option, decides (docs/broker-encryption.md,
-- "Payload encryption").
for _, push in ipairs(pushes) do
  if clear_on_sealed_queue(push.base, { push.item }) then return cjson.encode({ clear = push.queue }) end
end

-- Per sink queue, by its index in KEYS (3..): fresh messages, then the pushes in items' order.
local fresh, seen = {}, {}
for _, push in ipairs(pushes) do
  local key = push.key .. '\n' .. push.item.partition .. '\n' .. push.item.transactionId
  if not seen[key] and not redis.call('HGET', push.base .. 'd:' .. push.item.partition, push.item.transactionId) then
    seen[key] = true
    fresh[push.key] = (fresh[push.key] or 0) + 1
  end
end
-- The rule of push_items (includes/push-items.lua): the slowest group's backlog, plus the room
-- prepared transactions across slots hold.
for k = 3, #KEYS do
  local cfg = config_of(KEYS[k])
  if fresh[k] and cfg.maxSize > 0 then
    local depth = queue_depth(KEYS[k], redis.call('HKEYS', KEYS[k] .. 'groups'))
      + tonumber(redis.call('HGET', KEYS[k] .. 'stats', 'txpush') or '0')
    if depth + fresh[k] > cfg.maxSize then return fail('Queue is full (maxSize ' .. cfg.maxSize .. ')') end
  end
end

-- Apply phase ------------------------------------------------------------------------------
local stamp = fmt(now) .. ' '
for _, op in ipairs(ops) do
  if op.kind == 'u' then
    redis.call('HSET', shard_key, op.key, stamp .. op.value)
  else
    redis.call('HDEL', shard_key, op.key)
  end
end
if #ops > 0 then
  if rows > 0 then
    redis.call('SADD', sbase .. 'shards', shard)
    redis.call('HSET', sbase .. 'b', shard, fmt(bytes))
  else
    redis.call('SREM', sbase .. 'shards', shard)
    redis.call('HDEL', sbase .. 'b', shard)
  end
  redis.call('HINCRBY', stats, 'r:' .. field, rows - rows_before)
  redis.call('HINCRBY', stats, 'b:' .. field, bytes - bytes_before)
end

-- One push_items call per sink queue (its dedup reads and group lookups batched), in the
-- items' order within each queue.
local pushed, by_key = {}, {}
for index, push in ipairs(pushes) do
  by_key[push.key] = by_key[push.key] or {}
  table.insert(by_key[push.key], index)
end
for k = 3, #KEYS do
  local list, items = by_key[k], {}
  if list then
    for j, index in ipairs(list) do items[j] = pushes[index].item end
    local first = pushes[list[1]]
    local results = push_items(KEYS[k], items, config_of(KEYS[k]), now, first.namespace, first.task)
    for j, index in ipairs(list) do
      local push = pushes[index]
      pushed[index] = { queue = push.queue, partitionId = push.item.partitionId, transactionId = push.item.transactionId,
        queued = results[j][1], messageId = results[j][2] }
    end
  end
end

local ack_result = false
if ack then
  local cfg = config_of(ack.base)
  local base, p, g = ack.base, ack.p, ack.g
  local st = redis.call('HMGET', ckey(base, p, g), 'lease', 'exp', 'upto', 'n')
  local held = st[1] and tonumber(st[2] or '0') > now
  local rset = base .. 'r:' .. p .. ':' .. g
  local dlq = 0
  local count = ack.count
  if ack.status == 'failed' or ack.status == 'dlq' then
    if cfg.deadLetterQueue then
      dead_letter(base, p, g, ack_id, ack.err,
        tonumber(redis.call('HGET', base .. 'rc:' .. p .. ':' .. g, ack_id) or '0'), now)
    end
    dlq = 1
    count = 0
  end
  -- The cursor moves to the acked message: everything up to it is consumed by the group.
  each_entry('XRANGE', base .. 's:' .. p, '(' .. position(base, p, g), ack_id, math.huge, function(e)
    resolve(base, p, g, e[1])
    if held and id_cmp(e[1], st[3]) <= 0 then redis.call('SADD', rset, e[1]) end
  end)
  local released = 0
  if held and ((ack.lease ~= '' and ack.release) or dlq == 1
      or redis.call('SCARD', rset) >= tonumber(st[4] or '0')) then
    release_lease(base, p, g, st[1])
    released = 1
  end
  advance(base, p, g)
  if released == 1 or not st[1] then reschedule(base, p, g, now) end
  schedule_trim(base, p, now + cfg.completedRetentionSeconds * 1000)
  ack_result = { count = count, released = released, dlq = dlq }
end

if across and not decided then
  redis.call('SET', home .. 'txd:' .. txid, 'committed', 'EX', decision_memory)
  outbox_add(home, 'k', 'apply', 'x', txid, 'q', shares)
end
local answer = cjson.encode({ ok = true, applied = #ops, pushes = pushed, ack = ack_result, intents = outbox_written,
  txid = across and txid or nil, shares = across and cjson.decode(shares) or nil })
redis.call('SET', memo_key, answer, 'EX', memory)
return answer
