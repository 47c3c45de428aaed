--[[
  Deletes what retention allows from the partitions of one queue that are due:
  messages resolved by every group (after completedRetentionSeconds), messages older than
  retentionSeconds or ttl (whether consumed or not), and their dedup entries.
  KEYS[1]  <base>cfg
  ARGV[1]  base: <prefix>{<queue>}:
  ARGV[2]  limit: partitions handled per call
  ARGV[3]  maximum entries deleted per partition per call
  Returns the number of entries deleted.
  Resend-safe: naturally; cuts are by time and position, so a second run deletes only what
  became due in between.
]]
--@include broker

local base = ARGV[1]
local limit, per_partition = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local cfg = queue_config(base)
local due = redis.call('ZRANGEBYSCORE', base .. 'trim', '-inf', now, 'LIMIT', 0, limit)
local groups = redis.call('HKEYS', base .. 'groups')
local deleted = 0
for _, p in ipairs(due) do
  local stream = base .. 's:' .. p
  -- Everything up to min_pos is resolved by every group; leased batches sit after a group's pos.
  local min_pos = nil
  local leased_pos = nil
  for _, g in ipairs(groups) do
    local pos = position(base, p, g)
    if not min_pos or id_cmp(pos, min_pos) < 0 then min_pos = pos end
    if redis.call('HEXISTS', ckey(base, p, g), 'lease') == 1 then
      if not leased_pos or id_cmp(pos, leased_pos) < 0 then leased_pos = pos end
    end
  end
  local age_cut = 0
  if cfg.retentionSeconds > 0 then age_cut = now - cfg.retentionSeconds * 1000 end
  if cfg.ttl > 0 and now - cfg.ttl * 1000 > age_cut then age_cut = now - cfg.ttl * 1000 end
  local done_cut = now - cfg.completedRetentionSeconds * 1000
  local entries = redis.call('XRANGE', stream, '-', '+', 'COUNT', per_partition)
  local doomed = {}
  local next_at = nil
  for _, e in ipairs(entries) do
    local id = e[1]
    local ms = id_ms(id)
    local consumed = min_pos and id_cmp(id, min_pos) <= 0
    local protected = leased_pos and id_cmp(id, leased_pos) > 0
    if (consumed and ms <= done_cut) or (ms <= age_cut and not protected) then
      doomed[#doomed + 1] = e
    else
      if consumed then next_at = ms + cfg.completedRetentionSeconds * 1000
      elseif age_cut > 0 and not protected then
        local horizon = cfg.retentionSeconds
        if cfg.ttl > 0 and (horizon == 0 or cfg.ttl < horizon) then horizon = cfg.ttl end
        next_at = ms + horizon * 1000
      elseif cfg.retentionSeconds > 0 or cfg.ttl > 0 then
        next_at = now + 1000
      end
      break
    end
  end
  if #doomed > 0 then
    local ids = {}
    local dedup = base .. 'd:' .. p
    for k, e in ipairs(doomed) do
      ids[k] = e[1]
      redis.call('HDEL', dedup, field(e, 't') or '')
    end
    redis.call('XDEL', stream, unpack(ids))
    deleted = deleted + #ids
    redis.call('HINCRBY', base .. 'stats', 'size', -#ids)
    -- Groups whose position is behind the deleted range move past it (eviction).
    local last = ids[#ids]
    for _, g in ipairs(groups) do
      local ck = ckey(base, p, g)
      if id_cmp(position(base, p, g), last) < 0 then
        redis.call('HSET', ck, 'pos', last)
        local aset = base .. 'a:' .. p .. ':' .. g
        for _, id in ipairs(redis.call('SMEMBERS', aset)) do
          if id_cmp(id, last) <= 0 then redis.call('SREM', aset, id) end
        end
      end
      local rc = base .. 'rc:' .. p .. ':' .. g
      for _, id in ipairs(ids) do redis.call('HDEL', rc, id) end
    end
    if #doomed == #entries and #entries == per_partition then next_at = now end
  end
  if next_at then
    redis.call('ZADD', base .. 'trim', next_at, p)
  else
    redis.call('ZREM', base .. 'trim', p)
  end
end
return deleted
