--[[
  Writes a queue's options (POST /api/v1/configure): its creation time once, then the fields
  given. One script, so with BROKER_MIN_REPLICAS_ACK the write and its replica barrier share one
  pipeline (src/redis/replication.ts).
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   now: createdAt (ms) of a queue configured for the first time
  ARGV[2..] fields: field, value pairs (namespace, task, then the options given)
  Returns 1.
  Resend-safe: naturally; HSETNX keeps the first createdAt and HSET writes the same values again.
]]
local cfg = KEYS[1] .. 'cfg'
redis.call('HSETNX', cfg, 'createdAt', ARGV[1])
redis.call('HSET', cfg, unpack(ARGV, 2))
return 1
