-- The value of field `name` of a stream entry (false when absent).
local function field(e, name)
  local f = e[2]
  for i = 1, #f, 2 do
    if f[i] == name then return f[i + 1] end
  end
  return false
end
