-- The millisecond part of a stream id: when the entry was added.
local function id_ms(id)
  return tonumber(string.match(id, '^(%d+)'))
end
