--[[
  Applies pushes and acks all-or-nothing: every operation is checked first, nothing is written
  unless all pass. A transaction may span queues: each queue it touches is declared.
  KEYS[1]   base: <prefix>{<tag>}:... the base of the first queue the transaction touches
  KEYS[2..] bases: the base of each further queue it touches, once each (the file name's 1 is
            the least number of keys: one per queue touched; redis/queue-store.ts passes them).
            On Redis Cluster they must share one hash tag (one slot): redis/queue-store.ts
            refuses a transaction spanning slots before running this
            (docs/broker-topologies.md "Redis topologies").
  ARGV[1..] operations: each starting with its type and the index of its queue's base in KEYS:
              'push', key index, namespace, task, partition, partitionId, transactionId,
                      messageId, traceId, data, producerSub                   (11 entries)
              'ack',  key index (0: a partition no queue has, checked as not found), partition,
                      group, transactionId, status, leaseId, error            (8 entries)
              'publish', update id, topics (JSON array), private ('1'/'0'), event type ('' for
                      none), data: a hub update recorded in KEYS[1]'s outbox (6 entries; a
                      transaction of publishes only names an outbox base of its own)
  Returns { 'OK', result..., intents } with result { 'push', queued(1/0), messageId },
  { 'ack', 1, dlq(1/0), repeat(1/0) } or { 'publish' }, and intents the number of outbox
  intents recorded (publishes and bridged queues' events, includes/outbox.lua);
  { 'FAIL', index (0-based), error }, or { 'CLEAR', index } when a push to a queue with
  encryptionEnabled carries an unsealed payload (nothing written).
  Resend-safe: per request id (shared/redis/README.md). A second run finds its acks already
  applied (answered as repeats) and its pushes stored under the same messageId (answered as queued
  again); a refusal (FAIL, CLEAR) comes from the check phase, before anything is written. A
  second run records its publishes again: the update ids are the same (the node fixed them before
  the first run), so the hub, which keeps one update per id, applies them once.
]]
--@include ack-many
--@include check-ack
--@include clear-on-sealed-queue
--@include clock
--@include config-of
--@include outbox
--@include push-items
--@include queue-depth

local now = now_ms()
local ops = {}
local i = 1
while i <= #ARGV do
  if ARGV[i] == 'push' then
    ops[#ops + 1] = { kind = 'push', base = KEYS[tonumber(ARGV[i + 1])], namespace = ARGV[i + 2], task = ARGV[i + 3],
      item = read_push_item(i + 4) }
    i = i + 11
  elseif ARGV[i] == 'ack' then
    -- Key index 0: the ack's partition belongs to no queue (found nowhere: 'Message not found').
    ops[#ops + 1] = { kind = 'ack', base = KEYS[tonumber(ARGV[i + 1])], unknown = ARGV[i + 1] == '0',
      p = ARGV[i + 2], g = ARGV[i + 3], txn = ARGV[i + 4], status = ARGV[i + 5], lease = ARGV[i + 6], err = ARGV[i + 7] }
    i = i + 8
  elseif ARGV[i] == 'publish' then
    ops[#ops + 1] = { kind = 'publish', id = ARGV[i + 1], topics = ARGV[i + 2], private = ARGV[i + 3],
      type = ARGV[i + 4], data = ARGV[i + 5] }
    i = i + 6
  else
    return { 'FAIL', #ops, 'Unknown operation type: ' .. tostring(ARGV[i]) }
  end
end

-- Check phase: nothing is written until every operation is known to succeed.
local acked = {}
local fresh, fresh_order = {}, {}
local seen = {}
for index, op in ipairs(ops) do
  if op.kind == 'ack' then
    if op.unknown then return { 'FAIL', index - 1, 'Message not found' } end
    local id, err = check_ack(op.base, op.p, op.g, op.txn, op.lease, op.status, now)
    if not id then return { 'FAIL', index - 1, err } end
    local key = op.base .. op.p .. '\n' .. op.g .. '\n' .. id
    if acked[key] then return { 'FAIL', index - 1, 'Message already acknowledged' } end
    acked[key] = true
  elseif op.kind == 'push' then
    if clear_on_sealed_queue(op.base, { op.item }) then return { 'CLEAR', index - 1 } end
    local key = op.base .. op.item.partition .. '\n' .. op.item.transactionId
    if not seen[key] and not redis.call('HGET', op.base .. 'd:' .. op.item.partition, op.item.transactionId) then
      seen[key] = true
      if not fresh[op.base] then fresh_order[#fresh_order + 1] = op end
      fresh[op.base] = (fresh[op.base] or 0) + 1
    end
  end
end
-- By the first push of each queue (a loop variable is no key: test/lua-keys.ts).
for _, first in ipairs(fresh_order) do
  local cfg = config_of(first.base)
  if cfg.maxSize > 0 then
    if queue_depth(first.base, redis.call('HKEYS', first.base .. 'groups')) + fresh[first.base] > cfg.maxSize then
      return { 'FAIL', -1, 'Queue is full (maxSize ' .. cfg.maxSize .. ')' }
    end
  end
end

-- Apply phase.
local out = {}
for index, op in ipairs(ops) do
  if op.kind == 'push' then
    local results = push_items(op.base, { op.item }, config_of(op.base), now, op.namespace, op.task)
    out[index] = { 'push', results[1][1], results[1][2] }
  elseif op.kind == 'publish' then
    outbox_add(KEYS[1], 'k', 'publish', 'i', op.id, 't', op.topics, 'v', op.private, 'y', op.type, 'd', op.data)
    out[index] = { 'publish' }
  else
    -- One ack at a time: operations apply in their order, pushes and acks interleaved.
    local answer = ack_many(op.base, { op }, config_of(op.base), now)[1]
    out[index] = { 'ack', answer[1], answer[4], answer[5] }
  end
end
return { 'OK', out, outbox_written }
