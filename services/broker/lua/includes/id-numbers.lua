-- The two numbers of stream id `id`, and their order as id_cmp orders ids: an ack batch parses
-- each id once, and its consumer's pos and upto once (id_cmp parsed both sides per call).
local function id_numbers(id)
  local dash = string.find(id, '-', 1, true)
  return tonumber(string.sub(id, 1, dash - 1)), tonumber(string.sub(id, dash + 1))
end

local function numbers_cmp(am, as, bm, bs)
  if am ~= bm then
    if am < bm then return -1 else return 1 end
  end
  if as == bs then return 0 elseif as < bs then return -1 else return 1 end
end
