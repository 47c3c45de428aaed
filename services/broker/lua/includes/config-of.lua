--@include queue-config

-- queue_config read once per queue in one script run (a transaction or a streams cycle reads a
-- queue's options in its check phase and again to apply).
local configs_read = {}

local function config_of(base)
  if not configs_read[base] then configs_read[base] = queue_config(base) end
  return configs_read[base]
end
