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

-- When a resolved message becomes deletable: completedRetentionSeconds after its creation
-- (the rule compares a message's age, lua/retention-1.lua), only when retention is enabled with
-- a window above 0 (Queen's rule); nil otherwise. Already past for an old message: due now.
local function completed_trim_at(cfg, created_ms)
  if cfg.retentionEnabled and cfg.completedRetentionSeconds > 0 then
    return created_ms + cfg.completedRetentionSeconds * 1000
  end
  return nil
end
