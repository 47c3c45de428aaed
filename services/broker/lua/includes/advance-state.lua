--@include call-chunked
--@include each-entry

-- Moves one consumer state's pos over resolved ids, once for a whole ack batch: entries
-- resolved in this batch (st.resolved) or before it (the set a:, only read when not empty).
local function advance_state(base, st)
  local pending = st.acount + st.fresh
  if pending == 0 then return end
  local stream = base .. 's:' .. st.p
  local pos = st.pos
  local passed, srem = {}, {}
  -- pos moves over at most `pending` entries: read no more than that.
  each_entry('XRANGE', stream, '(' .. pos, '+', pending, function(e)
    local id = e[1]
    if st.resolved[id] then
      if st.inset[id] then srem[#srem + 1] = id end
    elseif st.acount > 0 and redis.call('SISMEMBER', st.aset, id) == 1 then
      srem[#srem + 1] = id
    else
      return false
    end
    pos = id
    passed[#passed + 1] = id
  end)
  if #passed == 0 then return end
  st.pos = pos
  st.passed = {}
  for _, id in ipairs(passed) do st.passed[id] = true end
  call_chunked('SREM', st.aset, srem)
  local rc = base .. 'rc:' .. st.p .. ':' .. st.g
  if redis.call('EXISTS', rc) == 1 then call_chunked('HDEL', rc, passed) end
  redis.call('HSET', st.ck, 'pos', pos)
end

--[[
  The fast path of advance_state: an ack batch that completed every message of a whole lease
  moves pos to the lease's `upto` without reading the entries back (the XRANGE of the whole
  batch was ~200 of the ~700 µs of an ack of 100, docs/benchmarks.md "Round 2"). Returns false,
  changing nothing, where that is not provably what advance_state does; the caller then runs it.
  Taken when the pop's record `from` names the current lease and pos (pos has not moved since
  that pop), nothing is resolved ahead of pos (a: empty before and after the batch) and the
  batch completed st.n distinct messages, each under the valid lease (after pos, up to upto).
  Why the result is advance_state's: when the lease was taken, every entry in (pos, upto] was
  leased (st.n of them) or in a: (pop-1.lua). Since then no entry entered that range (XADD
  only appends), and each one that left a: left the stream (forget_entry, create_group,
  retention) or was passed by pos (advance, advance_state, retention: pos only moves forward,
  a seek deletes c:<p>:<g> and its record with it). So the range holds at most st.n entries;
  the batch completed st.n distinct retained ones in it (a dedup entry is deleted with its
  message), so it holds exactly those: advance_state would read them, pass them all (nothing
  in a: to remove) and stop at upto, clearing their retry counts.
]]
local function advance_whole_lease(base, st)
  if not st.leased_from or st.leased_from ~= st.lease_at_read .. ' ' .. st.pos then return false end
  if st.acount > 0 or st.fresh ~= st.n or st.fresh_leased ~= st.n then return false end
  st.pos = st.upto
  st.passed = {}
  for _, id in ipairs(st.fresh_ids) do st.passed[id] = true end
  local rc = base .. 'rc:' .. st.p .. ':' .. st.g
  if redis.call('EXISTS', rc) == 1 then call_chunked('HDEL', rc, st.fresh_ids) end
  redis.call('HSET', st.ck, 'pos', st.pos)
  return true
end
