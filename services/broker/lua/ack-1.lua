--[[
  Applies acknowledgements for one queue, in order.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1..] acks: 6 entries each: partition (URI-encoded), group (URI-encoded), transactionId,
            status (completed|success|failed|retry|dlq), leaseId ('' = no lease check), error
  Returns { per ack { success (1/0), error or '', leaseReleased (1/0), dlq (1/0), repeat (1/0) },
  intents } (intents: how many completions the queue's bridge recorded, includes/outbox.lua).
  Resend-safe: per request id (shared/redis/README.md). An ack already applied is answered again
  as a success flagged repeat without being applied twice (under a lease: the answer recorded in
  la:<leaseId>; without one: a resolved message repeats a completed/success ack). A repeat changes
  no state, so a resent batch never moves pos again (whole lease or not:
  services/broker/test/ack-whole-lease.test.ts applies one twice), and records no outbox intent.
]]
--@include ack-many
--@include clock
--@include queue-config

local base = KEYS[1]
local acks = {}
for i = 1, #ARGV, 6 do
  acks[#acks + 1] = { p = ARGV[i], g = ARGV[i + 1], txn = ARGV[i + 2], status = ARGV[i + 3],
    lease = ARGV[i + 4], err = ARGV[i + 5] }
end
local rows = ack_many(base, acks, queue_config(base), now_ms())
return { rows, outbox_written }
