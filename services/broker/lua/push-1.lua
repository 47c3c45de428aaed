--[[
  Appends messages to the partitions of one queue, with dedup by (partition, transactionId).
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   namespace: stored when the queue is created
  ARGV[2]   task: stored when the queue is created
  ARGV[3..] items: 5 entries each (PUSH_ITEM_ARGS): partition (URI-encoded), partitionId,
            transactionId, messageId, message (the record its stream keeps,
            includes/message-fields.lua, or it after '5': stored as five fields then,
            includes/push-items.lua)
  Returns { 'OK', {status, messageId}..., intents } (status 1 queued, 0 duplicate; intents: how
  many the queue's bridge recorded in its outbox, includes/outbox.lua) or
  { 'FULL', size, maxSize } when maxSize would be exceeded, or { 'CLEAR' } when the queue has
  encryptionEnabled and an item's payload is not sealed (nothing written either way).
  Resend-safe: per request id (shared/redis/README.md). Dedup by transactionId; an item found
  stored under its own messageId (generated per request by the node) is this request's first run:
  'queued'. A refusal (FULL, CLEAR) writes nothing, so a resend refuses again. Outbox intents
  are recorded for fresh messages only, so a resend records none again.
]]
--@include clear-on-sealed-queue
--@include clock
--@include push-items
--@include queue-config
--@include read-push-item

local base = KEYS[1]
local now = now_ms()
local cfg = queue_config(base)
local items = {}
for i = 3, #ARGV, PUSH_ITEM_ARGS do
  items[#items + 1] = read_push_item(ARGV, i)
end
if clear_on_sealed_queue(base, items) then return { 'CLEAR' } end
local results, size = push_items(base, items, cfg, now, ARGV[1], ARGV[2])
if not results then return { 'FULL', size, cfg.maxSize } end
return { 'OK', results, outbox_written }
