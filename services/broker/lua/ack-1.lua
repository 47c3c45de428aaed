--[[
  Applies acknowledgements for one queue, in order.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   records: '1' when every connected broker node reads answer records ('*<p>' fields of
            la:<leaseId>, includes/lease-answers.lua); '0' while a node of a release before them
            is connected (redis/record-readers.ts): a batch then leaves a field per ack, which
            every release reads
  ARGV[2..] acks: runs of acks that share all but their transactionId, each: partition
            (URI-encoded), group (URI-encoded), status (completed|success|failed|retry|dlq),
            leaseId ('' = no lease check), error, count, then count transactionIds (a batch of
            100 acks of one lease is 106 arguments, not 600: each argument costs Redis a string
            to read and Lua a string to build)
  Returns { per ack its refusal (a string) or 1 + 2 leaseReleased + 4 dlq + 8 repeat, intents }
  (intents: how many completions the queue's bridge recorded, includes/outbox.lua).
  Resend-safe: per request id (shared/redis/README.md). An ack already applied is answered again
  as a success flagged repeat without being applied twice (under a lease: the answer recorded in
  la:<leaseId>, includes/lease-answers.lua; without one: a resolved message repeats a
  completed/success ack). A repeat changes no state, so a resent batch never moves pos again
  (whole lease or not: services/broker/test/ack-whole-lease.test.ts applies one twice), and
  records no outbox intent.
]]
--@include drain-when-full
--@include ack-many
--@include ack-whole-lease
--@include clock
--@include queue-config

local base = KEYS[1]
local records = ARGV[1] == '1'
local cfg, now = queue_config(base), now_ms()
-- One run naming a whole lease (the usual batch): no table per ack (ack-whole-lease.lua).
if #ARGV > 7 and 7 + tonumber(ARGV[7]) == #ARGV then
  local rows = ack_whole_lease(base, ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV, 8, #ARGV, cfg, now, records)
  if rows then return { rows, 0 } end
end
local acks = {}
local i = 2
while i <= #ARGV do
  local p, g, status, lease, err = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local last = i + 5 + tonumber(ARGV[i + 5])
  for t = i + 6, last do
    acks[#acks + 1] = { p = p, g = g, txn = ARGV[t], status = status, lease = lease, err = err }
  end
  i = last + 1
end
local rows = ack_many(base, acks, cfg, now, records)
return { rows, outbox_written }
