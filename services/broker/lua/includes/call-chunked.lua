-- Calls `command chunked_key members...` in chunks (Lua's unpack has a bounded stack). The name
-- `chunked_key` is kept for keys only (test/lua-keys.ts follows key names across the script).
local function call_chunked(command, chunked_key, members)
  for s = 1, #members, 1000 do
    redis.call(command, chunked_key, unpack(members, s, math.min(s + 999, #members)))
  end
end
