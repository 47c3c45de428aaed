--@include field
--@include record-fields

-- The transactionId of a message entry (includes/message-fields.lua) without decoding its whole
-- record or copying its payload: retention reads one per message it deletes. The header starts
-- '["<messageId>","<transactionId>"': a node's message ids need no escape, and a transactionId
-- without a backslash ends at the next quote; any other is decoded.
local function entry_transaction(e)
  local f = e[2]
  if f[1] ~= 'r' then return field(e, 't') or '' end
  local r = f[2]
  local at = string.find(r, '","', 3, true)
  local stop = at and string.find(r, '"', at + 3, true)
  if stop then
    local txn = string.sub(r, at + 3, stop - 1)
    if not string.find(txn, '\\', 1, true) then return txn end
  end
  local _, t = record_fields(r)
  return t
end
