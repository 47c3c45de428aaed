--[[
  Drops the state generations of a streams query below its current one (docs/broker-streams.md,
  "Streams"): run by the node after every registration, in the slot of the query's home queue
  (and of its previous home after a reset moved it). A reset only starts a new generation in
  the registry (streams-register-1.lua); this deletes the older ones.
  KEYS[1]   queryBase: <prefix>streams:{<id>}: or, where slots are enforced,
            <home queue base>~streams:<id>:; generation g > 0 lives under KEYS[1] .. 'g<g>:',
            generation 0 under KEYS[1] itself; KEYS[1] .. 'gen' holds the lowest live generation
  KEYS[2]   stats: the stats hash: fields r:<field>, b:<field> (rows, bytes), the field being
            the query id for generation 0 and '<id>:<g>' after
  ARGV[1]   generation: the query's current generation
  ARGV[2]   queryId: the query's id
  Returns the number of generations dropped (0: nothing to do).
  Resend-safe: naturally (shared/redis/README.md). KEYS[1] .. 'gen' records the generation dropped
  up to; a second run finds it at ARGV[1] and does nothing. Cycles of an older generation are
  refused once it is set (streams-cycle-2.lua), so no write lands in a dropped generation.
]]
local qbase, stats = KEYS[1], KEYS[2]
local gen, id = tonumber(ARGV[1]), ARGV[2]
local marker = tonumber(redis.call('GET', qbase .. 'gen') or '0')
if gen <= marker then return 0 end
for g = marker, gen - 1 do
  local sbase, field = qbase, id
  if g > 0 then
    sbase = qbase .. 'g' .. g .. ':'
    field = id .. ':' .. g
  end
  for _, shard in ipairs(redis.call('SMEMBERS', sbase .. 'shards')) do
    redis.call('UNLINK', sbase .. 's:' .. shard)
  end
  redis.call('DEL', sbase .. 'shards', sbase .. 'b')
  redis.call('HDEL', stats, 'r:' .. field, 'b:' .. field)
end
redis.call('SET', qbase .. 'gen', gen)
return gen - marker
