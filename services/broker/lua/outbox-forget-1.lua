--[[
  Takes a queue off the outbox index (the relays' list of outboxes to look at, src/redis/outbox.ts)
  once its outbox was found empty, unless it was marked again since that look: a node that
  recorded intents meanwhile moved its score, so the queue stays listed.
  KEYS[1]   due: <prefix>outbox:due, a sorted set queue -> when relays should look (ms)
  ARGV[1]   queue: the queue whose outbox was found empty
  ARGV[2]   score: the queue's score when the relay took it
  Returns 1 when removed, else 0.
  Resend-safe: naturally; a second run finds the queue gone (or re-marked) and removes nothing.
]]
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 1
end
return 0
