--@include quadruple
--@include double
-- Shared helper built on two others (double is also quadruple's): eight times a number.
local function octuple(value)
  return double(quadruple(value))
end
