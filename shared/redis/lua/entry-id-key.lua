--@include clock
--[[
  The id to hand XADD on a clock tests move (`--@include entry-id` loaded with `clock: 'key'`):
  '<ms>-*', so XADD stamps an entry with the test clock's time (clock-key.lua).
]]
local function new_entry_id()
  return string.format('%.0f', now_ms()) .. '-*'
end
