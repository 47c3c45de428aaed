-- The record of a message (includes/message-fields.lua) from its fields: for a message the
-- script writes itself (a requeued dead letter) and for an entry of an earlier release.
local function record_of(m, t, tr, d, s)
  return cjson.encode({ m, t, tr, s }) .. '\n' .. d
end
