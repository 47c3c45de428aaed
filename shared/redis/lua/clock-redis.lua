--[[
  The clock of scripts in production (`--@include clock`, loadScripts' default `clock: 'redis'`):
  now_ms() reads Redis TIME; new_entry_id() is '*', so XADD stamps an entry with Redis's own
  clock. '*' and not '<ms>-*': after the server's clock steps back, an explicit id below the
  stream's last one is an error, where '*' still gives an id after it.
]]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function new_entry_id()
  return '*'
end
