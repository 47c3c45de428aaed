--[[
  Finds the history position of the entry carrying an update id, if still in history.
  KEYS[1]   index: hash update id -> position
  KEYS[2]   history: the history stream
  ARGV[1]   updateId: the update id
  Returns the position, or false when unknown or trimmed.
  Resend-safe: writes nothing.
]]
local position = redis.call('HGET', KEYS[1], ARGV[1])
if not position then
  return false
end
local entry = redis.call('XRANGE', KEYS[2], position, position, 'COUNT', 1)
if #entry == 0 then
  return false
end
return position
