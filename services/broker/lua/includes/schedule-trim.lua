-- LT: an earlier due time wins, a later one never postpones work already due.
local function schedule_trim(base, p, at)
  redis.call('ZADD', base .. 'trim', 'LT', at, p)
end
