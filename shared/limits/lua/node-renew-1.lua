--[[
  Renews a node's lease on the slots it holds of one kind (a node leaving gives leaseMs 0: its
  slots stop counting at once), and forgets nodes gone for an hour.
  KEYS[1]   base: <prefix>{limits}: (every key the script touches is this text plus a suffix)
  ARGV[1]   kind: subscriptions
  ARGV[2]   nodeId: the node
  ARGV[3]   leaseMs: how long its slots count from now without another renewal
  Returns 1.
  Resend-safe: naturally. A second run sets the same lease again (a few ms later at most).
]]
--@include clock
local now = now_ms()
local nodes = KEYS[1] .. 'nodes:' .. ARGV[1]
redis.call('ZADD', nodes, now + tonumber(ARGV[3]), ARGV[2])
redis.call('ZREMRANGEBYSCORE', nodes, '-inf', now - 3600000)
return 1
