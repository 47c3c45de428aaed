--@include field

-- m, t, tr, d, s of a message entry: positional when written by push_items (the usual
-- layout), by name otherwise.
local function message_fields(e)
  local f = e[2]
  if f[1] == 'm' and f[3] == 't' and f[5] == 'tr' and f[7] == 'd' and f[9] == 's' then
    return f[2], f[4], f[6], f[8], f[10]
  end
  return field(e, 'm') or '', field(e, 't') or '', field(e, 'tr') or '', field(e, 'd') or 'null',
    field(e, 's') or ''
end
