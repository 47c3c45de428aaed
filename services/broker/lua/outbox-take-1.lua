--[[
  Takes the head of a queue's outbox for one relay (src/redis/outbox.ts): the relay that holds
  the outbox's lock (renewed by each take) reads its oldest intents; another relay gets nothing
  until the lock lapses, so a queue's intents are relayed in their order by one node at a time.
  KEYS[1]   base: <prefix>{<queue>}: (every key the script touches is this text plus a suffix)
  ARGV[1]   relay: the taking relay's id (one per node)
  ARGV[2]   lockMs: how long the lock holds without another take
  ARGV[3]   count: most intents returned
  Returns { 1, entries } (entries as XRANGE gives them: { id, { field, value, ... } }) for the
  lock's holder, { 0, ms } while another relay holds it for ms more. Bounded by size as well,
  as a pop is: the entries' fields come to TAKE_BYTES at most, the first entry always (read a
  few at a time while they are large, includes/read-sized.lua), so intents carrying large
  messages come in several takes.
  Resend-safe: naturally; a second take by the same relay renews the same lock and reads the
  same head (only outbox-done-1.lua removes intents).
]]
--@include drain-when-full
--@include each-entry

local TAKE_BYTES = 16777216
local lock = KEYS[1] .. 'obl'
local holder = redis.call('GET', lock)
if holder and holder ~= ARGV[1] then return { 0, redis.call('PTTL', lock) } end
redis.call('SET', lock, ARGV[1], 'PX', ARGV[2])
local entries, taken = {}, 0
each_entry('XRANGE', KEYS[1] .. 'ob', '-', '+', tonumber(ARGV[3]), function(e)
  local size = entry_bytes(e)
  if #entries > 0 and taken + size > TAKE_BYTES then return false end
  entries[#entries + 1] = e
  taken = taken + size
end)
return { 1, entries }
