--[[
  The retention schedule: when push and ack make a partition's messages deletable
  (the `trim` index lua/retention-1.lua visits).
  Part of lua/includes/broker.lua (included from there, after what it uses).
]]

-- LT: an earlier due time wins, a later one never postpones work already due.
local function schedule_trim(base, p, at)
  redis.call('ZADD', base .. 'trim', 'LT', at, p)
end

-- Seconds after its creation when a message may next be removed whatever its consumption
-- (retentionSeconds when retention is enabled, ttl, maxWaitTimeSeconds), 0 when never.
local function age_horizon(cfg)
  local horizon = 0
  local function take(seconds)
    if seconds > 0 and (horizon == 0 or seconds < horizon) then horizon = seconds end
  end
  if cfg.retentionEnabled then take(cfg.retentionSeconds) end
  take(cfg.ttl)
  take(cfg.maxWaitTimeSeconds)
  return horizon
end

-- When an ack makes messages deletable: completedRetentionSeconds later, only when retention
-- is enabled with a window above 0 (Queen's rule); nil otherwise.
local function completed_trim_at(cfg, now)
  if cfg.retentionEnabled and cfg.completedRetentionSeconds > 0 then
    return now + cfg.completedRetentionSeconds * 1000
  end
  return nil
end
