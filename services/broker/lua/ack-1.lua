--[[
  Applies acknowledgements for one queue, in order.
  KEYS[1]  <base>cfg
  ARGV[1]  base: <prefix>{<queue>}:
  ARGV[2..] acks, 6 entries each: partition (URI-encoded), group (URI-encoded), transactionId,
           status (completed|success|failed|retry|dlq), leaseId ('' = no lease check), error
  Returns per ack { success (1/0), error or '', leaseReleased (1/0), dlq (1/0) }.
]]
--@include broker

local base = ARGV[1]
local now = now_ms()
local cfg = queue_config(base)
local out = {}
for i = 2, #ARGV, 6 do
  local ok, err, released, dlq = apply_ack(base, ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3],
    ARGV[i + 4], ARGV[i + 5], cfg, now)
  out[#out + 1] = { ok, err or '', released, dlq }
end
return out
