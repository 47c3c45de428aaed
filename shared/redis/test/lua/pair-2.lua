-- Sets two keys at once and returns both values.
-- KEYS[1] first key, KEYS[2] second key
-- ARGV[1] first value, ARGV[2] second value
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return { redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]) }
