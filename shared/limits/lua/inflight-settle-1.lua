--[[
  Settles a pop's reservation: its weight becomes the number of messages the pop leased, held
  until the lease expires, and each (partition, group) it leased points at it for the acks;
  none leased (or the messages were given back or acknowledged at once) gives it back whole.
  KEYS[1]   base: <prefix>{limits}: (every key the script touches is this text plus a suffix)
  ARGV[1]   tenant: the encoded tenant the reservation was made for
  ARGV[2]   leaseId: the pop's lease id
  ARGV[3]   count: messages leased under it (0: give the reservation back)
  ARGV[4]   expiresAt: the lease's expiry (ms)
  ARGV[5..] pairs: "<partitionId>\n<encoded group>" of each leased partition (open)
  Returns the weight the lease now holds.
  Resend-safe: naturally. It sets absolute values (weight, expiry, indexes), and the node
  awaits it before the pop answers, so no ack can move the weight between two runs.
]]
--@include forget-lease
local base = KEYS[1]
local tenant = ARGV[1]
local lease = ARGV[2]
local count = tonumber(ARGV[3])
if count <= 0 then
  forget_lease(base, tenant, lease)
  return 0
end
local weights = base .. 'lw:' .. tenant
local before = tonumber(redis.call('HGET', weights, lease)) or 0
redis.call('HSET', weights, lease, count)
redis.call('HINCRBY', weights, '~total', count - before)
redis.call('ZADD', base .. 'lz:' .. tenant, ARGV[4], lease)
local layout = { tenant }
for i = 5, #ARGV do
  layout[#layout + 1] = ARGV[i]
  redis.call('HSET', base .. 'lp', ARGV[i], lease)
end
redis.call('HSET', base .. 'lg', lease, table.concat(layout, '\t'))
return count
