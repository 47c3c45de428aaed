--[[
  The id to hand XADD in production (`--@include entry-id`, loadScripts' default `clock: 'redis'`):
  '*', so XADD stamps an entry with Redis's own clock. '*' and not '<ms>-*': after the server's
  clock steps back, an explicit id below the stream's last one is an error, where '*' still gives
  an id after it.
]]
local function new_entry_id()
  return '*'
end
