--[[
  A clock tests move (`--@include clock` loaded with `clock: 'key'`): now_ms() reads the
  milliseconds stored at KEYS[1] .. '~test-clock' (the script's first key with a suffix, so it
  shares the script's hash slot on Redis Cluster). The test sets the key before a script runs
  (a missing key is an error: the script would otherwise run on a clock the test does not see)
  and never moves it back.
]]
local function now_ms()
  local ms = tonumber(redis.call('GET', KEYS[1] .. '~test-clock'))
  if not ms then error('no test clock at ' .. KEYS[1] .. '~test-clock') end
  return ms
end
