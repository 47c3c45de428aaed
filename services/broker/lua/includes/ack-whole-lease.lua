--@include age-horizon
--@include answer-memory
--@include call-chunked
--@include ckey
--@include completed-trim-at
--@include id-numbers
--@include lease-answers
--@include lease-record
--@include position
--@include release-lease
--@include reschedule
--@include schedule-trim

--[[
  The usual ack batch without ack_many's bookkeeping per ack (a table, a verdict, memo and
  resolved entries for each: ~10 µs of Lua per ack, most of an ack call): one run of acks
  (txns[first..last], one partition p, group g and lease) completing every message of the lease
  in its first batch under it. Returns ack_many's rows for it, or nil, changing nothing, when
  the batch is not exactly that; the caller then runs ack_many.
  Taken when: status completed or success; the queue bridges no completion; group g holds the
  lease on p, unexpired, over as many messages as the run names (n), taken after the current
  pos (the pop's record `from`); nothing resolved ahead of pos (a: empty) nor answered under
  the lease (r: empty, no la:<lease>); every transactionId names a retained message, all
  distinct, each after pos and up to upto.
  Why ack_many would do the same: each ack passes ack_verdict (no recorded answer: la: absent;
  lease held and unexpired; not resolved: after pos, a: empty), is applied as a completion and
  counted once in r: (empty before, distinct ids), so the n-th releases the lease; the batch
  completed n distinct messages of (pos, upto], which holds only the lease's n
  (advance_whole_lease's reasoning), so pos moves to upto; one answer for all: one record, or
  with records false a field per ack, as ack_many leaves then.
]]
local function ack_whole_lease(base, p, g, status, lease, txns, first, last, cfg, now, records)
  if lease == '' or (status ~= 'completed' and status ~= 'success') then return nil end
  if cfg.bridgeTopic ~= '' and cfg.bridgeOn ~= 'push' then return nil end
  local n = last - first + 1
  local ck = ckey(base, p, g)
  local v = redis.call('HMGET', ck, 'lease', 'exp', 'upto', 'n', 'pos', 'from')
  if v[1] ~= lease or tonumber(v[2] or '0') <= now or not v[3] or tonumber(v[4] or '0') ~= n then return nil end
  local pos = v[5] or group_start(base, g)
  if v[6] ~= lease .. ' ' .. pos then return nil end
  local aset, rset = base .. 'a:' .. p .. ':' .. g, base .. 'r:' .. p .. ':' .. g
  if redis.call('EXISTS', base .. 'la:' .. lease, aset, rset) > 0 then return nil end
  local pos_ms, pos_seq = id_numbers(pos)
  local upto_ms, upto_seq = id_numbers(v[3])
  -- Each dedup value is '<ms>-<seq> <messageId>': read in place, distinct by itself.
  local found, seen, k = {}, {}, 0
  local oldest
  for s = first, last, 1000 do
    local values = redis.call('HMGET', base .. 'd:' .. p, unpack(txns, s, math.min(s + 999, last)))
    for _, d in ipairs(values) do
      if not d or seen[d] then return nil end
      seen[d] = true
      local dash = string.find(d, '-', 1, true)
      local ms = tonumber(string.sub(d, 1, dash - 1))
      local seq = tonumber(string.sub(d, dash + 1, string.find(d, ' ', dash, true) - 1))
      if ms < pos_ms or (ms == pos_ms and seq <= pos_seq) or ms > upto_ms or (ms == upto_ms and seq > upto_seq) then
        return nil
      end
      k = k + 1
      found[k] = d
      if not oldest or ms < oldest then oldest = ms end
    end
  end
  -- What ack_many writes for this batch, in its order.
  release_lease(base, p, g, lease)
  local rc = base .. 'rc:' .. p .. ':' .. g
  if redis.call('EXISTS', rc) == 1 then
    local ids = {}
    for j, d in ipairs(found) do ids[j] = string.sub(d, 1, string.find(d, ' ', 1, true) - 1) end
    call_chunked('HDEL', rc, ids)
  end
  redis.call('HSET', ck, 'pos', v[3])
  if redis.call('HEXISTS', base .. 'groups', g) == 0 then redis.call('SADD', base .. 'unreg', g) end
  redis.call('HINCRBY', base .. 'stats', 'resolved:' .. g, n)
  redis.call('HINCRBY', base .. 'stats', 'pending:' .. g, -n)
  reschedule(base, p, g, now)
  local la = base .. 'la:' .. lease
  if records then
    redis.call('HSET', la, record_field(p), record_text('done:0', txns, first, last))
  else
    local fields = {}
    for j = first, last do
      fields[#fields + 1] = answer_field(p, txns[j])
      fields[#fields + 1] = 'done:0'
    end
    call_chunked('HSET', la, fields)
  end
  redis.call('PEXPIRE', la, ANSWER_MEMORY_MS)
  local trim_at = completed_trim_at(cfg, oldest)
  if trim_at then schedule_trim(base, p, trim_at) end
  if age_horizon(cfg) > 0 then redis.call('ZADD', base .. 'trim', 'XX', 'LT', now, p) end
  -- ack_many's codes: 1 applied; 3 applied and the lease released (by the n-th ack).
  local rows = {}
  for j = 1, n - 1 do rows[j] = 1 end
  rows[n] = 3
  return rows
end
