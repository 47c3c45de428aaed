-- Shared helper: twice a number.
local function double(value)
  return value * 2
end
