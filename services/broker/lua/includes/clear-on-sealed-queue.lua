--@include record-data

-- docs/broker-encryption.md "Payload encryption": with encryptionEnabled every stored payload is an envelope
-- the node sealed (its text starts with this). A clear one comes from a node that has not read
-- the option since it was turned on: refused, so that node re-reads it and seals.
local SEALED_PREFIX = '{"$herald.enc":'

local function clear_on_sealed_queue(base, items)
  if redis.call('HGET', base .. 'cfg', 'encryptionEnabled') ~= 'true' then return false end
  for _, item in ipairs(items) do
    if string.sub(record_data(item.message), 1, #SEALED_PREFIX) ~= SEALED_PREFIX then return true end
  end
  return false
end
