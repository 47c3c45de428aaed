--@include entry-id

--[[
  The outbox (docs/broker-outbox.md): intents recorded by the script whose state change causes
  them, in the queue's own slot, and relayed by a node (src/outbox.ts) to their destination,
  which applies each once by its id. Fields: k kind ('bridge' | 'publish'), then per kind:
    bridge   e event ('pushed' | 'completed'), p partition, m messageId, x transactionId,
             g group ('' for pushed), t topic template, v private ('1'/'0'), d payload as stored
    publish  i update id, t topics (JSON array), v private, y event type ('' for none), d data
]]
-- How many intents this run recorded: every script that may record one returns it, so the node
-- knows to have them relayed (src/redis/outbox.ts).
local outbox_written = 0

local function outbox_add(base, ...)
  redis.call('XADD', base .. 'ob', new_entry_id(), ...)
  outbox_written = outbox_written + 1
end

-- A message of a bridged queue became an event (pushed, or completed by group g).
local function outbox_bridge(base, cfg, event, p, message_id, txn, g, data)
  outbox_add(base, 'k', 'bridge', 'e', event, 'p', p, 'm', message_id, 'x', txn, 'g', g,
    't', cfg.bridgeTopic, 'v', cfg.bridgePrivate and '1' or '0', 'd', data)
end
