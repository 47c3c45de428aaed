-- -1, 0, 1 comparing two stream ids (plain find: pattern captures showed in ack batches)
local function id_cmp(a, b)
  if a == b then return 0 end
  local ad = string.find(a, '-', 1, true)
  local bd = string.find(b, '-', 1, true)
  local am = tonumber(string.sub(a, 1, ad - 1))
  local bm = tonumber(string.sub(b, 1, bd - 1))
  if am ~= bm then
    if am < bm then return -1 else return 1 end
  end
  local as = tonumber(string.sub(a, ad + 1))
  local bs = tonumber(string.sub(b, bd + 1))
  if as == bs then return 0 elseif as < bs then return -1 else return 1 end
end
