-- Stores twice ARGV[1] at KEYS[1] and returns it, through an included helper.
-- KEYS[1] the key
-- ARGV[1] a number
--@include double
local result = double(tonumber(ARGV[1]))
redis.call('SET', KEYS[1], result)
return result
