--@include first
local function second() return 2 end
