--@include second
local function first() return second() end
