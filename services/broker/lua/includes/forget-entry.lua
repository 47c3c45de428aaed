--@include advance
--@include id-cmp
--@include position

-- An entry deleted from partition p (one message deleted or requeued): each group that had
-- not resolved it has one message less pending; one that had, forgets it.
local function forget_entry(base, p, id)
  for _, g in ipairs(redis.call('HKEYS', base .. 'groups')) do
    if id_cmp(id, position(base, p, g)) > 0 then
      if redis.call('SREM', base .. 'a:' .. p .. ':' .. g, id) == 0 then
        redis.call('HINCRBY', base .. 'stats', 'pending:' .. g, -1)
      end
      -- What g resolved right behind the entry is now next to its position: move over it.
      advance(base, p, g)
      -- The entry may be the one stats-1.lua noted as next after the position.
      redis.call('HDEL', base .. 'heads', p .. '\n' .. g)
    end
  end
end
