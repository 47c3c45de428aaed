--[[
  Appends an update to one partition's history and publishes it on that partition's fan-out
  channel, atomically, so the publish order is the history order on every node (docs/hub.md,
  topic partitions). Every key is one partition's, under one hash tag (one Cluster slot).
  KEYS[1]   history: the history stream
  KEYS[2]   positions: hash update id -> position of its entry in history (Last-Event-ID lookups)
  KEYS[3]   ages: sorted set update id scored by the millisecond part of that position (for
            trimming KEYS[2])
  KEYS[4]   channel: the fan-out channel (declared so a Cluster routes the call to the shard
            owning it)
  ARGV[1]   updateId: the update id
  ARGV[2]   update: the encoded update (JSON)
  ARGV[3]   historySize: history size bound (approximate: whole stream nodes are trimmed)
  ARGV[4]   historyAge: history age bound in milliseconds, 0 for none
  ARGV[5]   deadline: in Redis server time (ms): past it the node has already answered 503
  ARGV[6]   sharded: '1' to fan out with SPUBLISH (Redis Cluster: sharded pub/sub, carried by
            the shard owning KEYS[4] only); else PUBLISH (standalone, Sentinel)
  Returns { position (stream entry id), 1 when the id was already in history (nothing appended)
  else 0 }; the channel message is "<position>\n<encoded update>". Errors with DEADLINE when run
  after ARGV[5]: changes nothing.
  Resend-safe: per request id, per partition, by update id (docs/hub.md, resent publishes): an id
  whose entry is still in history is never appended again, its position is returned. That covers
  ioredis resending a command whose reply was lost and a publisher retrying after a 503 whose
  publish had in fact been applied. An id whose entry was trimmed is appended anew and the index
  moves to the new entry, so the index always names the only copy in history. An update in k
  partitions is k calls, one deadline for all: a retry appends only the copies that are missing.
]]
--@include clock
--@include entry-id
local nowMs = now_ms()
if nowMs > tonumber(ARGV[5]) then
  return redis.error_reply('DEADLINE publish reached Redis after the node gave up on it')
end
local existing = redis.call('HGET', KEYS[2], ARGV[1])
if existing and #redis.call('XRANGE', KEYS[1], existing, existing, 'COUNT', 1) > 0 then
  return { existing, 1 }
end
local position = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], new_entry_id(), 'u', ARGV[2])
local ttl = tonumber(ARGV[4])
if ttl > 0 then
  redis.call('XTRIM', KEYS[1], 'MINID', '~', tostring(nowMs - ttl))
  -- An idle history disappears entirely once every entry is older than the bound.
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
end
local positionMs = tonumber(string.match(position, '^(%d+)-'))
redis.call('HSET', KEYS[2], ARGV[1], position)
redis.call('ZADD', KEYS[3], positionMs, ARGV[1])
-- Forget ids whose entries were trimmed, a bounded number per call so the index cannot grow
-- without bound yet no call does unbounded work.
local oldest = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
if #oldest > 0 then
  local oldestMs = tonumber(string.match(oldest[1][1], '^(%d+)-'))
  local stale = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. oldestMs, 'LIMIT', 0, 64)
  if #stale > 0 then
    redis.call('HDEL', KEYS[2], unpack(stale))
    redis.call('ZREM', KEYS[3], unpack(stale))
  end
end
if ARGV[6] == '1' then
  redis.call('SPUBLISH', KEYS[4], position .. '\n' .. ARGV[2])
else
  redis.call('PUBLISH', KEYS[4], position .. '\n' .. ARGV[2])
end
return { position, 0 }
