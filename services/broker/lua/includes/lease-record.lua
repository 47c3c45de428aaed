-- The text of a record of answers under a lease (lease-answers.lua): the answer, then the
-- transactionIds txns[first..last] as a JSON array (cjson: C in Redis, and any byte survives).
local function record_text(answer, txns, first, last)
  local list, k = {}, 0
  for j = first, last do
    k = k + 1
    list[k] = txns[j]
  end
  return answer .. cjson.encode(list)
end
