--@include read-push-item

--[[
  A transaction's operations (transaction-1.lua; across Redis Cluster slots each slot's share
  also goes through txn-prepare-1.lua and txn-apply-1.lua), read from args (ARGV, or the copy a
  prepared share stored) from args[start], each starting with its type and the index of its
  queue's base in KEYS:
    'push', key index, namespace, task, partition, partitionId, transactionId, messageId,
            record (includes/message-fields.lua)          (4 + PUSH_ITEM_ARGS = 9 entries)
    'ack',  key index (0: a partition no queue has, checked as not found), partition, group,
            transactionId, status, leaseId, error                               (8 entries)
    'publish', update id, topics (JSON array), private ('1'/'0'), event type ('' for none),
            data: a hub update recorded in KEYS[1]'s outbox                     (6 entries)
  Returns the operations, or nil and the refusal { 'FAIL', index, error }.
]]
local function read_transaction_ops(args, start)
  local ops = {}
  local i = start
  while i <= #args do
    if args[i] == 'push' then
      ops[#ops + 1] = { kind = 'push', base = KEYS[tonumber(args[i + 1])], namespace = args[i + 2], task = args[i + 3],
        item = read_push_item(args, i + 4) }
      i = i + 4 + PUSH_ITEM_ARGS
    elseif args[i] == 'ack' then
      -- Key index 0: the ack's partition belongs to no queue (found nowhere: 'Message not found').
      ops[#ops + 1] = { kind = 'ack', base = KEYS[tonumber(args[i + 1])], unknown = args[i + 1] == '0',
        p = args[i + 2], g = args[i + 3], txn = args[i + 4], status = args[i + 5], lease = args[i + 6], err = args[i + 7] }
      i = i + 8
    elseif args[i] == 'publish' then
      ops[#ops + 1] = { kind = 'publish', id = args[i + 1], topics = args[i + 2], private = args[i + 3],
        type = args[i + 4], data = args[i + 5] }
      i = i + 6
    else
      return nil, { 'FAIL', #ops, 'Unknown operation type: ' .. tostring(args[i]) }
    end
  end
  return ops
end
