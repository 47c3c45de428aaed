--@include entry-id
--@include message-fields
--@include fmt

-- Copies the message `id` of partition p to the dead letters, with the error and attempts.
local function dead_letter(base, p, g, id, err, attempts, now)
  local e = redis.call('XRANGE', base .. 's:' .. p, id, id)
  if #e == 0 then return end
  local m, t, tr, d, s = message_fields(e[1])
  redis.call('XADD', base .. 'dlq', new_entry_id(), 'p', p, 'g', g, 'sid', id,
    'm', m, 't', t, 'tr', tr, 'd', d, 's', s, 'err', err or '', 'rc', attempts, 'at', fmt(now))
  redis.call('HINCRBY', base .. 'stats', 'dlq', 1)
end
