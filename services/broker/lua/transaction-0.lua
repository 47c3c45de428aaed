--[[
  Applies pushes and acks all-or-nothing: every operation is checked first, nothing is written
  unless all pass. Takes no KEYS because a transaction may span queues: standalone Redis only
  (a transaction touching two queues lives in two Cluster slots and is refused there; see
  docs/broker.md).
  ARGV[1..] operations, each starting with its type:
    'push', base, namespace, task, partition, partitionId, transactionId, messageId, traceId,
            data, producerSub                                   (11 entries)
    'ack',  base, partition, group, transactionId, status, leaseId, error   (8 entries)
  Returns { 'OK', result... } with result { 'push', queued(1/0), messageId } or
  { 'ack', 1, dlq(1/0), repeat(1/0) }, { 'FAIL', index (0-based), error }, or { 'CLEAR', index }
  when a push to a queue with encryptionEnabled carries an unsealed payload (nothing written).
  Resend-safe (shared/redis/README.md): a second run finds its acks already applied (answered
  as repeats) and its pushes stored under the same messageId (answered as queued again); a
  refusal (FAIL, CLEAR) comes from the check phase, before anything is written.
]]
--@include broker

local now = now_ms()
local ops = {}
local i = 1
while i <= #ARGV do
  if ARGV[i] == 'push' then
    ops[#ops + 1] = { kind = 'push', base = ARGV[i + 1], namespace = ARGV[i + 2], task = ARGV[i + 3],
      item = { ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8], ARGV[i + 9], ARGV[i + 10] } }
    i = i + 11
  elseif ARGV[i] == 'ack' then
    ops[#ops + 1] = { kind = 'ack', base = ARGV[i + 1], p = ARGV[i + 2], g = ARGV[i + 3], txn = ARGV[i + 4],
      status = ARGV[i + 5], lease = ARGV[i + 6], err = ARGV[i + 7] }
    i = i + 8
  else
    return { 'FAIL', #ops, 'Unknown operation type: ' .. tostring(ARGV[i]) }
  end
end

-- Check phase: nothing is written until every operation is known to succeed.
local configs = {}
local function config_of(base)
  if not configs[base] then configs[base] = queue_config(base) end
  return configs[base]
end
local acked = {}
local fresh = {}
local seen = {}
for index, op in ipairs(ops) do
  if op.kind == 'ack' then
    local id, err = check_ack(op.base, op.p, op.g, op.txn, op.lease, op.status, now)
    if not id then return { 'FAIL', index - 1, err } end
    local key = op.base .. op.p .. '\n' .. op.g .. '\n' .. id
    if acked[key] then return { 'FAIL', index - 1, 'Message already acknowledged' } end
    acked[key] = true
  else
    if clear_on_sealed_queue(op.base, { op.item }) then return { 'CLEAR', index - 1 } end
    local key = op.base .. op.item[1] .. '\n' .. op.item[3]
    if not seen[key] and not redis.call('HGET', op.base .. 'd:' .. op.item[1], op.item[3]) then
      seen[key] = true
      fresh[op.base] = (fresh[op.base] or 0) + 1
    end
  end
end
for base, count in pairs(fresh) do
  local cfg = config_of(base)
  if cfg.maxSize > 0 then
    if queue_depth(base, redis.call('HKEYS', base .. 'groups')) + count > cfg.maxSize then
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
  else
    -- One ack at a time: operations apply in their order, pushes and acks interleaved.
    local answer = ack_many(op.base, { op }, config_of(op.base), now)[1]
    out[index] = { 'ack', answer[1], answer[4], answer[5] }
  end
end
return { 'OK', out }
