-- A number as an integer's digits (times and counts Redis stores): %.0f, not Lua's %.14g form.
local function fmt(n)
  return string.format('%.0f', n)
end
