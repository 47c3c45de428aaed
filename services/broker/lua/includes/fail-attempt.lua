--@include ckey
--@include dead-letter
--@include fmt
--@include resolve

-- Counts one failed attempt for a message; dead-letters it past retryLimit.
-- Returns true when dead-lettered.
local function fail_attempt(base, p, g, id, err, cfg, now)
  local attempts = redis.call('HINCRBY', base .. 'rc:' .. p .. ':' .. g, id, 1)
  if attempts > cfg.retryLimit then
    if cfg.deadLetterQueue then dead_letter(base, p, g, id, err, attempts, now) end
    resolve(base, p, g, id)
    return true
  end
  if cfg.retryDelay > 0 then
    redis.call('HSET', ckey(base, p, g), 'nb', fmt(now + cfg.retryDelay))
  end
  return false
end
