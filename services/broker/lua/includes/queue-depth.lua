--@include ensure-backlog

--[[
  What maxSize is compared with (docs/broker-api.md "Queue options"): the backlog of the slowest
  consumer group, i.e. the retained messages it has not resolved; before any group exists,
  every retained message. Resolved messages kept by retention rules never count.
]]
local function queue_depth(base, groups)
  if #groups == 0 then return tonumber(redis.call('HGET', base .. 'stats', 'size') or '0') end
  ensure_backlog(base, groups)
  local fields = {}
  for i, g in ipairs(groups) do fields[i] = 'pending:' .. g end
  local depth = 0
  for s = 1, #fields, 1000 do
    for _, v in ipairs(redis.call('HMGET', base .. 'stats', unpack(fields, s, math.min(s + 999, #fields)))) do
      local n = tonumber(v or '0')
      if n > depth then depth = n end
    end
  end
  return depth
end
