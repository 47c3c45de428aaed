--[[
  Gives back one slot a node took with slot-acquire.
  KEYS[1]   base: <prefix>{limits}: (every key the script touches is this text plus a suffix)
  ARGV[1]   requestId: the node's id for this call (the resend memo)
  ARGV[2]   kind: subscriptions
  ARGV[3]   tenant: the encoded tenant
  ARGV[4]   nodeId: the node giving it back
  Returns 1.
  Resend-safe: per-request id. m:<requestId> marks the release done for 60 s; a second run finds
  it and gives nothing back again.
]]
local base = KEYS[1]
local memo = base .. 'm:' .. ARGV[1]
if redis.call('SET', memo, '1', 'NX', 'PX', 60000) then
  local counts = base .. 'n:' .. ARGV[2] .. ':' .. ARGV[3]
  if redis.call('HINCRBY', counts, ARGV[4], -1) <= 0 then redis.call('HDEL', counts, ARGV[4]) end
end
return 1
