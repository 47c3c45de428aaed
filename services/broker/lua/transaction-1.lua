--[[
  Applies pushes, acks and hub updates all-or-nothing: every operation is checked first, nothing
  is written unless all pass. A transaction may span queues: each queue it touches is declared.
  Across Redis Cluster slots it is the commit of the coordinator's share (docs/broker-outbox.md,
  "Transactions across slots"): the other slots' shares were prepared (txn-prepare-1.lua), and
  this run records the decision and, in the coordinator's outbox, the intent to apply them.
  KEYS[1]   base: <prefix>{<tag>}:... the base of the first queue the transaction touches (or
            an outbox base of its own for a transaction of hub updates only)
  KEYS[2..] bases: the base of each further queue it touches, once each (the file name's 1 is
            the least number of keys: one per queue touched; redis/queue-store.ts passes them).
            On Redis Cluster they share one hash tag (one slot).
  ARGV[1]   transactionId: the id of a transaction across slots ('' for one within one slot)
  ARGV[2]   shares: JSON list of the other slots' shares, each the list of its queues in KEYS
            order ('' for none): recorded in the apply intent
  ARGV[3]   memory: seconds the decision is kept (a resent commit and recovery read it; '' when
            ARGV[1] is '')
  ARGV[4..] operations: as includes/transaction-read.lua reads them
  Returns { 'OK', result..., intents } with result { 'push', queued(1/0), messageId, transactionId },
  { 'ack', 1, dlq(1/0), repeat(1/0) } or { 'publish' }, and intents the number of outbox
  intents recorded (includes/outbox.lua); { 'FAIL', index (0-based), error }, or
  { 'CLEAR', index } when a push to a queue with encryptionEnabled carries an unsealed payload
  (nothing written).
  Resend-safe: per request id (shared/redis/README.md). A second run finds its acks already
  applied (answered as repeats) and its pushes stored under the same messageId (answered as queued
  again); a refusal (FAIL, CLEAR) comes from the check phase, before anything is written. A
  second run records its hub updates again: the update ids are the same (the node fixed them
  before the first run), so the hub, which keeps one update per id, applies them once. Across
  slots, the decision txd:<id> is written once: a second run finds it and records no second apply
  intent; a decision of 'aborted' (recovery timed the transaction out first) refuses the commit.
]]
--@include clock
--@include transaction-apply
--@include transaction-check
--@include transaction-read

local now = now_ms()
local txid, shares = ARGV[1], ARGV[2]
local decision = KEYS[1] .. 'txd:' .. txid
local decided = txid ~= '' and redis.call('GET', decision)
if decided == 'aborted' then
  return { 'FAIL', -1, 'Transaction timed out before it committed (nothing applied)' }
end

local ops, refused = read_transaction_ops(ARGV, 4)
if not ops then return refused end
local fresh
fresh, refused = check_transaction_ops(ops, now)
if not fresh then return refused end

local out = apply_transaction_ops(ops, now, false)
if txid ~= '' and not decided then
  redis.call('SET', decision, 'committed', 'EX', ARGV[3])
  outbox_add(KEYS[1], 'k', 'apply', 'x', txid, 'q', shares)
end
return { 'OK', out, outbox_written }
