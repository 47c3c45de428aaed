-- Stores eight times ARGV[1] at KEYS[1] and returns it, through includes that include others.
-- KEYS[1] the key
-- ARGV[1] a number
--@include double
--@include octuple
--@include quadruple
local result = octuple(tonumber(ARGV[1]))
redis.call('SET', KEYS[1], result)
return result
