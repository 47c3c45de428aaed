--@include field
--@include record-fields

--[[
  A message entry of a partition's stream holds one field, r: the record `<header>\n<data>`,
  the header being the JSON text of [messageId, transactionId, traceId, producerSub] ('' for
  none) and data the payload's JSON text. The node builds it (redis/message-record.ts); JSON text
  holds no raw newline, so the first one ends the header. One field instead of five: a pop reads
  and answers one value per message. Entries of earlier releases hold m, t, tr, d, s as fields of
  their own, by position when push_items wrote them, by name otherwise; push_items still writes
  those while a node of an earlier release is connected (redis/record-readers.ts).
  message_fields(e) returns m, t, tr, d, s of either.
]]
local function message_fields(e)
  local f = e[2]
  if f[1] == 'r' then return record_fields(f[2]) end
  if f[1] == 'm' and f[3] == 't' and f[5] == 'tr' and f[7] == 'd' and f[9] == 's' then
    return f[2], f[4], f[6], f[8], f[10]
  end
  return field(e, 'm') or '', field(e, 't') or '', field(e, 'tr') or '', field(e, 'd') or 'null',
    field(e, 's') or ''
end
