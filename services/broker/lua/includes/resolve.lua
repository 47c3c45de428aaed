-- Marks one message resolved for group g (acked, dead-lettered or expired).
local function resolve(base, p, g, id)
  if redis.call('SADD', base .. 'a:' .. p .. ':' .. g, id) == 1 then
    redis.call('HINCRBY', base .. 'stats', 'resolved:' .. g, 1)
    redis.call('HINCRBY', base .. 'stats', 'pending:' .. g, -1)
  end
end
