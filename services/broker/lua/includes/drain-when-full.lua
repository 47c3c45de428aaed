--[[
  Lets this script run while Redis is full (used memory above maxmemory, the noeviction policy
  the broker needs). Redis refuses a script's first write that may add data when it started
  out of memory, but never a write after one (it cannot stop a script half-way): this deletes a
  key that never exists, a write that adds nothing and is not replicated. Included by the
  scripts that let consumers drain a full Redis and free its memory (pop, ack, leases, seek,
  retention, deletions, the outbox relay, stats); the scripts that add messages (push,
  transactions, DLQ requeue, streams) keep the refusal: their callers answer 503
  HERALD_BROKER_STORAGE_FULL (docs/broker-operations.md, "Redis full").
]]
redis.call('DEL', KEYS[1] .. '~full')
