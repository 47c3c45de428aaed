-- Appends an update to the history and publishes it on the fan-out channel, atomically, so the
-- publish order is the history order on every node (docs/hub.md, cluster design).
-- KEYS[1] history stream
-- KEYS[2] hash: update id -> position of its entry in history (Last-Event-ID lookups)
-- KEYS[3] sorted set: update id scored by the millisecond part of that position (for trimming KEYS[2])
-- ARGV[1] fan-out channel
-- ARGV[2] update id
-- ARGV[3] encoded update (JSON)
-- ARGV[4] history size bound (approximate: whole stream nodes are trimmed)
-- ARGV[5] history age bound in milliseconds, 0 for none
-- ARGV[6] deadline in Redis server time (ms): past it the node has already answered 503
-- Returns { position (stream entry id), 1 when the id was already in history (nothing appended)
-- else 0 }; the channel message is "<position>\n<encoded update>".
-- Errors with DEADLINE when run after ARGV[6]: changes nothing.
--
-- Safe when applied twice (docs/hub.md, resent publishes): an id whose entry is still in history
-- is never appended again, its position is returned. That covers ioredis resending a command whose
-- reply was lost and a publisher retrying after a 503 whose publish had in fact been applied. An
-- id whose entry was trimmed is appended anew and the index moves to the new entry, so the index
-- always names the only copy in history.
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
if nowMs > tonumber(ARGV[6]) then
  return redis.error_reply('DEADLINE publish reached Redis after the node gave up on it')
end
local existing = redis.call('HGET', KEYS[2], ARGV[2])
if existing and #redis.call('XRANGE', KEYS[1], existing, existing, 'COUNT', 1) > 0 then
  return { existing, 1 }
end
local position = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[4], '*', 'u', ARGV[3])
local ttl = tonumber(ARGV[5])
if ttl > 0 then
  redis.call('XTRIM', KEYS[1], 'MINID', '~', tostring(nowMs - ttl))
  -- An idle history disappears entirely once every entry is older than the bound.
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
end
local positionMs = tonumber(string.match(position, '^(%d+)-'))
redis.call('HSET', KEYS[2], ARGV[2], position)
redis.call('ZADD', KEYS[3], positionMs, ARGV[2])
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
redis.call('PUBLISH', ARGV[1], position .. '\n' .. ARGV[3])
return { position, 0 }
