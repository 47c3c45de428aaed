-- Adds ARGV[1] to a counter and returns the new value.
-- KEYS[1] the counter key
-- ARGV[1] the increment
return redis.call('INCRBY', KEYS[1], ARGV[1])
