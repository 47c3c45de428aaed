-- One item of a push as its arguments give it, from args[i] (ARGV, or a transaction's stored
-- copy of them): its PUSH_ITEM_ARGS entries as named fields (the order of push-1.lua's header,
-- which transaction-1.lua and streams-cycle-2.lua share). message: the record its stream keeps,
-- built by the node (includes/message-fields.lua), or it after '5': stored as five fields then
-- (push_items, redis/record-readers.ts).
local PUSH_ITEM_ARGS = 5
local function read_push_item(args, i)
  return { partition = args[i], partitionId = args[i + 1], transactionId = args[i + 2],
    messageId = args[i + 3], message = args[i + 4] }
end
