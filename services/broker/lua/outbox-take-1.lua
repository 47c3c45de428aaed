--[[
  Takes the head of a queue's outbox for one relay (src/redis/outbox.ts): the relay that holds
  the outbox's lock (renewed by each take) reads its oldest intents; another relay gets nothing
  until the lock lapses, so a queue's intents are relayed in their order by one node at a time.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   relay: the taking relay's id (one per node)
  ARGV[2]   lockMs: how long the lock holds without another take
  ARGV[3]   count: most intents returned
  Returns { 1, entries } (entries as XRANGE gives them: { id, { field, value, ... } }) for the
  lock's holder, { 0, ms } while another relay holds it for ms more.
  Resend-safe: naturally; a second take by the same relay renews the same lock and reads the
  same head (only outbox-done-1.lua removes intents).
]]
local lock = KEYS[1] .. 'obl'
local holder = redis.call('GET', lock)
if holder and holder ~= ARGV[1] then return { 0, redis.call('PTTL', lock) } end
redis.call('SET', lock, ARGV[1], 'PX', ARGV[2])
return { 1, redis.call('XRANGE', KEYS[1] .. 'ob', '-', '+', 'COUNT', ARGV[3]) }
