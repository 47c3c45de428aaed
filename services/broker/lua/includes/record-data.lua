-- The data (payload JSON text) of a message record: what follows its header's line
-- (includes/message-fields.lua).
local function record_data(text)
  return string.sub(text, string.find(text, '\n', 1, true) + 1)
end
