--[[
  Replaces the stats snapshot (src/redis/housekeeping.ts refreshStats), which /metrics and the
  lag the autoscalers read come from. Its first write deletes, so it also runs while Redis is
  full (Redis refuses only a script's first write that may add data): the lag stays current
  while consumers drain a full Redis (docs/broker-operations.md, "Redis full").
  KEYS[1]   snapshot: <prefix>stats, a hash queue -> the queue's stats (JSON)
  ARGV[1..] snapshot: queue, stats pairs (none when there is no queue)
  Returns the number of queues written.
  Resend-safe: naturally; a second run writes the same snapshot again.
]]
--@include call-chunked

redis.call('DEL', KEYS[1])
if #ARGV > 0 then call_chunked('HSET', KEYS[1], ARGV) end
return #ARGV / 2
