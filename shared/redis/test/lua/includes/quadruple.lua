--@include double
-- Shared helper built on another: four times a number.
local function quadruple(value)
  return double(double(value))
end
