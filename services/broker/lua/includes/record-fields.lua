-- m, t, tr, d, s of a message record's text (includes/message-fields.lua).
local function record_fields(text)
  local nl = string.find(text, '\n', 1, true)
  local h = cjson.decode(string.sub(text, 1, nl - 1))
  return h[1], h[2], h[3], string.sub(text, nl + 1), h[4]
end
