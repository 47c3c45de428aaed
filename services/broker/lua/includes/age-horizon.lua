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
