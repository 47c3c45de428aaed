--@include message-fields
--@include record-of

-- An entry's record (includes/message-fields.lua), built for an entry of an earlier release.
local function message_record(e)
  local f = e[2]
  if f[1] == 'r' then return f[2] end
  return record_of(message_fields(e))
end
