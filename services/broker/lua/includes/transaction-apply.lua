--@include ack-many
--@include ckey
--@include config-of
--@include outbox
--@include push-items

--[[
  Applies checked operations in their order, pushes and acks interleaved. prepared: the share
  of a transaction across slots checked earlier by txn-prepare-1.lua: its pushes use the room
  the prepare held (no maxSize check now) and its acks are applied whatever became of their lease
  since (the prepare kept it from expiring; one ended otherwise is not checked). Returns per
  operation { 'push', queued, messageId, transactionId }, { 'ack', ok, dlq, repeat } or { 'publish' }.
]]
local function apply_transaction_ops(ops, now, prepared)
  local out = {}
  for index, op in ipairs(ops) do
    if op.kind == 'push' then
      local cfg = config_of(op.base)
      if prepared then cfg = setmetatable({ maxSize = 0 }, { __index = cfg }) end
      local results = push_items(op.base, { op.item }, cfg, now, op.namespace, op.task)
      out[index] = { 'push', results[1][1], results[1][2], op.item.transactionId }
    elseif op.kind == 'publish' then
      outbox_add(KEYS[1], 'k', 'publish', 'i', op.id, 't', op.topics, 'v', op.private, 'y', op.type, 'd', op.data)
      out[index] = { 'publish' }
    else
      -- One ack at a time: operations apply in their order, pushes and acks interleaved.
      local ack = op
      if prepared and op.lease ~= '' then
        -- Its lease, kept by the prepare, answers under it (a client's retry is a repeat); one
        -- that ended anyway (a release, a seek) no longer decides.
        local st = redis.call('HMGET', ckey(op.base, op.p, op.g), 'lease', 'exp')
        if st[1] ~= op.lease or tonumber(st[2] or '0') <= now then
          ack = setmetatable({ lease = '' }, { __index = op })
        end
      end
      -- Its answer as a field of its own (records false): for one ack no larger than a record,
      -- and read by every release, so no rolling update has to be asked about.
      local answer = ack_many(op.base, { ack }, config_of(op.base), now, false)[1]
      if type(answer) == 'string' then
        out[index] = { 'ack', 0, 0, 0 }
      else
        out[index] = { 'ack', 1, math.floor(answer / 4) % 2, math.floor(answer / 8) % 2 }
      end
    end
  end
  return out
end
