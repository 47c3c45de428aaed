--[[
  Renews this node's lease on its active subscription entries.
  KEYS[1]   leases: sorted set node id -> lease expiry (ms)
  KEYS[2]   subscriptions: this node's set of subscription ids
  ARGV[1]   nodeId: this node's id
  ARGV[2]   expiry: the lease's new expiry (ms)
  Returns 1 when the lease was held (and is renewed), 0 when it had been reaped: the node must
  then register its entries again (another node already published their `active: false`
  events), which takes the lease anew.
  Resend-safe: naturally. A lease that was reaped is not taken here, so a second run still finds
  it missing and answers 0 again; renewing a held lease twice sets the same expiry.
]]
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
