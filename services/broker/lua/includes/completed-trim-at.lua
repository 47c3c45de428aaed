-- When a resolved message becomes deletable: completedRetentionSeconds after its creation
-- (the rule compares a message's age, lua/retention-1.lua), only when retention is enabled with
-- a window above 0 (Queen's rule); nil otherwise. Already past for an old message: due now.
local function completed_trim_at(cfg, created_ms)
  if cfg.retentionEnabled and cfg.completedRetentionSeconds > 0 then
    return created_ms + cfg.completedRetentionSeconds * 1000
  end
  return nil
end
