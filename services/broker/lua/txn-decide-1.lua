--[[
  Decides a transaction across slots whose committing node went away (docs/broker-outbox.md,
  "Transactions across slots"): its coordinator's decision if it committed, else 'aborted',
  written now so a commit arriving later refuses (transaction-1.lua reads it).
  KEYS[1]   base: the coordinator's base (the transaction's first queue)
  ARGV[1]   transactionId: the transaction's id
  ARGV[2]   memory: seconds an 'aborted' decision is kept (long: a stalled node's commit must
            still find it)
  Returns 'committed' or 'aborted'.
  Resend-safe: naturally; the decision is written once and read back.
]]
local decision = KEYS[1] .. 'txd:' .. ARGV[1]
local decided = redis.call('GET', decision)
if decided then return decided end
redis.call('SET', decision, 'aborted', 'EX', ARGV[2])
return 'aborted'
