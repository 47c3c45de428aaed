--@include check-ack
--@include clear-on-sealed-queue
--@include config-of
--@include queue-depth

--[[
  Checks every operation without writing anything: acks against their lease and state, pushes
  against encryption and maxSize (with the room prepared transactions hold, stats txpush).
  Returns fresh (queue base -> new messages the pushes store), or nil and the refusal
  { 'FAIL', index (0-based; -1 for a full queue), error } or { 'CLEAR', index }.
]]
local function check_transaction_ops(ops, now)
  local acked = {}
  local fresh, fresh_order = {}, {}
  local seen = {}
  for index, op in ipairs(ops) do
    if op.kind == 'ack' then
      if op.unknown then return nil, { 'FAIL', index - 1, 'Message not found' } end
      local id, err = check_ack(op.base, op.p, op.g, op.txn, op.lease, op.status, now)
      if not id then return nil, { 'FAIL', index - 1, err } end
      local key = op.base .. op.p .. '\n' .. op.g .. '\n' .. id
      if acked[key] then return nil, { 'FAIL', index - 1, 'Message already acknowledged' } end
      acked[key] = true
    elseif op.kind == 'push' then
      if clear_on_sealed_queue(op.base, { op.item }) then return nil, { 'CLEAR', index - 1 } end
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
      local held = tonumber(redis.call('HGET', first.base .. 'stats', 'txpush') or '0')
      if queue_depth(first.base, redis.call('HKEYS', first.base .. 'groups')) + held + fresh[first.base] > cfg.maxSize then
        return nil, { 'FAIL', -1, 'Queue is full (maxSize ' .. cfg.maxSize .. ')' }
      end
    end
  end
  return fresh
end
