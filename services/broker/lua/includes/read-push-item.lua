-- One item of a push as its arguments give it, from args[i] (ARGV, or a transaction's stored
-- copy of them): its 7 entries as named fields (the order of push-1.lua's header, which
-- transaction-1.lua and streams-cycle-2.lua share).
local function read_push_item(args, i)
  return { partition = args[i], partitionId = args[i + 1], transactionId = args[i + 2],
    messageId = args[i + 3], traceId = args[i + 4], data = args[i + 5], producerSub = args[i + 6] }
end
