--@include ack-verdict
--@include advance-state
--@include age-horizon
--@include answer-memory
--@include call-chunked
--@include ckey
--@include completed-trim-at
--@include dead-letter
--@include fail-attempt
--@include id-numbers
--@include lease-answers
--@include lease-record
--@include message-fields
--@include outbox
--@include position
--@include release-lease
--@include reschedule
--@include resolve
--@include schedule-trim

-- The answers ack_repeat reads back, by class and dlq (0/1): built once, not per ack.
local ANSWERS = {
  done = { [0] = 'done:0', [1] = 'done:1' },
  failed = { [0] = 'failed:0', [1] = 'failed:1' },
  dlq = { [0] = 'dlq:0', [1] = 'dlq:1' },
}

--[[
  Applies acks of one queue in order: the one ack implementation (lua/ack-1.lua calls it with
  a batch, lua/transaction-0.lua with each ack of a transaction). ack_verdict decides each
  ack; each (partition, group) state is read once and written once, so an in-order batch
  costs a few Redis calls per (partition, group) plus one XRANGE per 256 acks, none when it
  completes a whole lease (advance_whole_lease) (one ack at a time cost ~18 calls, the top
  cost of pop+ack in the profile). Resolved ids that pos moves over never enter the a: set;
  the a: and r: sets are only read when they were not empty before the batch; each acked id
  is parsed once (id_numbers). acks: list of {p, g, txn, status, lease, err}. records: whether
  a batch may leave its answers under a lease as one record (lease-answers.lua; false while a
  broker node that does not read records is connected). Returns per ack its refusal (a string),
  or a number: 1 + 2 leaseReleased + 4 dlq + 8 repeat (one value per ack for Redis to write and
  the node to read, not a table of five).
]]
local function ack_many(base, acks, cfg, now, records)
  local out = {}
  -- Dedup lookups (transactionId -> stream id), one HMGET per partition.
  local txns = {}
  for _, a in ipairs(acks) do
    local list = txns[a.p]
    if not list then list = {}; txns[a.p] = list end
    list[#list + 1] = a.txn
  end
  local dedup = {}
  for p, list in pairs(txns) do
    local map = {}
    for s = 1, #list, 1000 do
      local values = redis.call('HMGET', base .. 'd:' .. p, unpack(list, s, math.min(s + 999, #list)))
      for j, v in ipairs(values) do map[list[s + j - 1]] = v end
    end
    dedup[p] = map
  end

  local states, order, trims = {}, {}, {}
  -- Answers under each lease (lease-answers.lua): read with one HMGET per lease (an HGET per
  -- ack was the most frequent call of an ack batch), none for a lease's first batch (no la:
  -- key yet: every answer is absent). recorded[lease]: field -> answer, and per partition its
  -- record (parsed when first needed). This batch's answers: given[lease][p][txn], written once
  -- per (lease, partition) after the batch.
  local recorded, given, given_order = {}, {}, {}
  local lease_acks = {}
  for i, a in ipairs(acks) do
    if a.lease ~= '' then
      local list = lease_acks[a.lease]
      if not list then list = {}; lease_acks[a.lease] = list end
      list[#list + 1] = a
    end
  end
  for lease, list in pairs(lease_acks) do
    given[lease] = {}
    if redis.call('EXISTS', base .. 'la:' .. lease) == 1 then
      local fields, parts = {}, {}
      for _, a in ipairs(list) do
        fields[#fields + 1] = answer_field(a.p, a.txn)
        if not parts[a.p] then
          parts[a.p] = true
          fields[#fields + 1] = record_field(a.p)
        end
      end
      local answers, records = {}, {}
      for s = 1, #fields, 1000 do
        local values = redis.call('HMGET', base .. 'la:' .. lease, unpack(fields, s, math.min(s + 999, #fields)))
        for j, v in ipairs(values) do answers[fields[s + j - 1]] = v end
      end
      for p in pairs(parts) do records[p] = answers[record_field(p)] end
      recorded[lease] = { answers = answers, records = records }
    end
  end
  -- The answer recorded under a.lease for a's message, in this batch or before it (false: none).
  local function memo_of(a)
    local now_given = given[a.lease][a.p]
    if now_given and now_given.answers[a.txn] then return now_given.answers[a.txn] end
    local r = recorded[a.lease]
    if not r then return false end
    local answer = r.answers[answer_field(a.p, a.txn)]
    if answer then return answer end
    local kept = r.records[a.p]
    if not kept then return false end
    if type(kept) == 'string' then
      local record_answer, members = record_members(kept)
      kept = { answer = record_answer, members = members }
      r.records[a.p] = kept
    end
    return kept.members[a.txn] and kept.answer or false
  end
  local function state_of(p, g)
    local key = p .. '\n' .. g
    local st = states[key]
    if st then return st end
    local ck = ckey(base, p, g)
    local v = redis.call('HMGET', ck, 'lease', 'exp', 'upto', 'n', 'pos', 'from')
    st = {
      p = p, g = g, ck = ck,
      lease = v[1], exp = tonumber(v[2] or '0'), upto = v[3], n = tonumber(v[4] or '0'),
      pos = v[5] or group_start(base, g), pinned = v[5] ~= false,
      lease_at_read = v[1], leased_from = v[1] and v[6],
      aset = base .. 'a:' .. p .. ':' .. g, rset = base .. 'r:' .. p .. ':' .. g,
      resolved = {}, inset = {}, fresh = 0, fresh_ids = {}, fresh_leased = 0,
      answered = nil, rcount = 0, rnew = {}, rids = {},
      reschedule = false,
    }
    st.acount = redis.call('SCARD', st.aset)
    st.pos_ms, st.pos_seq = id_numbers(st.pos)
    if st.upto then st.upto_ms, st.upto_seq = id_numbers(st.upto) end
    states[key] = st
    order[#order + 1] = st
    return st
  end

  local bridge_completed = cfg.bridgeTopic ~= '' and cfg.bridgeOn ~= 'push'
  local last_p, last_g, last_st
  for i, a in ipairs(acks) do
    local d = dedup[a.p][a.txn]
    local memo = false
    if a.lease ~= '' then memo = memo_of(a) end
    -- Retention may have removed the message since the answer was recorded; a partition that
    -- is gone (its queue deleted) has no messages to answer for (as check_ack).
    if not d and memo and redis.call('HEXISTS', base .. 'parts', a.p) == 0 then memo = false end
    local st, id, resolved = nil, nil, false
    local id_ms_part, id_seq
    if d then
      id = string.sub(d, 1, string.find(d, ' ', 1, true) - 1)
      id_ms_part, id_seq = id_numbers(id)
      -- Batches usually name one (partition, group): no key string per ack.
      if a.p == last_p and a.g == last_g then
        st = last_st
      else
        st = state_of(a.p, a.g)
        last_p, last_g, last_st = a.p, a.g, st
      end
      resolved = numbers_cmp(id_ms_part, id_seq, st.pos_ms, st.pos_seq) <= 0 or st.resolved[id]
        or (st.acount > 0 and redis.call('SISMEMBER', st.aset, id) == 1)
    end
    local verdict = ack_verdict(a.lease, a.status, memo, d, resolved, st and st.lease, st and st.exp, now)
    if verdict then
      if verdict[1] == 0 then out[i] = verdict[2] else out[i] = 1 + 4 * verdict[4] + 8 * verdict[5] end
    else
      local had_lease = st.lease
      st.applied = true
      local leased = st.lease and st.exp > now and st.upto
        and numbers_cmp(id_ms_part, id_seq, st.upto_ms, st.upto_seq) <= 0
      local dlq = 0
      if a.status == 'completed' or a.status == 'success' then
        if bridge_completed then
          local e = redis.call('XRANGE', base .. 's:' .. a.p, id, id)[1]
          if e then
            local message_id, txn, _, data = message_fields(e)
            outbox_bridge(base, cfg, 'completed', a.p, message_id, txn, a.g, data)
          end
        end
        st.resolved[id] = true
        st.fresh = st.fresh + 1
        st.fresh_ids[#st.fresh_ids + 1] = id
        if leased then st.fresh_leased = st.fresh_leased + 1 end
      elseif a.status == 'dlq' then
        if cfg.deadLetterQueue then
          dead_letter(base, a.p, a.g, id, a.err,
            tonumber(redis.call('HGET', base .. 'rc:' .. a.p .. ':' .. a.g, id) or '0'), now)
        end
        resolve(base, a.p, a.g, id)
        st.resolved[id] = true
        st.inset[id] = true
        st.acount = st.acount + 1
        dlq = 1
      elseif fail_attempt(base, a.p, a.g, id, a.err, cfg, now) then
        st.resolved[id] = true
        st.inset[id] = true
        st.acount = st.acount + 1
        dlq = 1
      end
      local released = 0
      if leased then
        if st.answered == nil then
          st.rcount = redis.call('SCARD', st.rset)
          st.answered = st.rcount
        end
        if not st.rnew[id] and (st.rcount == 0 or redis.call('SISMEMBER', st.rset, id) == 0) then
          st.rnew[id] = true
          st.rids[#st.rids + 1] = id
          st.answered = st.answered + 1
        end
        if st.answered >= st.n then
          release_lease(base, a.p, a.g, st.lease)
          st.lease = false
          st.rids = {}
          released = 1
        end
      end
      if released == 1 or not had_lease then st.reschedule = true end
      -- The oldest message resolved in each partition: the earliest a trim can delete one.
      local created = id_ms_part
      if not trims[a.p] or created < trims[a.p] then trims[a.p] = created end
      if a.lease ~= '' then
        local answer = ANSWERS[ack_class(a.status)][dlq]
        local w = given[a.lease][a.p]
        if not w then
          w = { lease = a.lease, p = a.p, answers = {}, txns = {}, answer = answer }
          given[a.lease][a.p] = w
          given_order[#given_order + 1] = w
        end
        w.answers[a.txn] = answer
        w.txns[#w.txns + 1] = a.txn
        if w.answer ~= answer then w.answer = false end
        if released == 1 then w.released = true end
      end
      out[i] = 1 + 2 * released + 4 * dlq
    end
  end

  for _, st in ipairs(order) do
    if not advance_whole_lease(base, st) then advance_state(base, st) end
    -- A partition's state is created at the group's start; keep that position, so a group
    -- created later (an ack needs no registered group) does not move it (as in process).
    if st.applied and not st.pinned then redis.call('HSETNX', st.ck, 'pos', st.pos) end
    if st.applied and redis.call('HEXISTS', base .. 'groups', st.g) == 0 then
      redis.call('SADD', base .. 'unreg', st.g)
    end
    -- Resolved in this batch and not passed by pos: they join the a: set (and count once).
    local keep = {}
    for _, id in ipairs(st.fresh_ids) do
      if not (st.passed and st.passed[id]) then keep[#keep + 1] = id end
    end
    call_chunked('SADD', st.aset, keep)
    if st.fresh > 0 then
      redis.call('HINCRBY', base .. 'stats', 'resolved:' .. st.g, st.fresh)
      redis.call('HINCRBY', base .. 'stats', 'pending:' .. st.g, -st.fresh)
    end
    if st.lease then call_chunked('SADD', st.rset, st.rids) end
    if st.reschedule then reschedule(base, st.p, st.g, now) end
  end
  -- A batch that released the lease's hold on a partition with one answer for all its acks
  -- there leaves one record (when records may be written); any other leaves a field per ack.
  -- Nothing applied under the lease can follow a release on that partition, so no record is
  -- written twice.
  for _, w in ipairs(given_order) do
    local la = base .. 'la:' .. w.lease
    if records and w.released and w.answer then
      redis.call('HSET', la, record_field(w.p), record_text(w.answer, w.txns, 1, #w.txns))
    else
      local fields = {}
      for _, txn in ipairs(w.txns) do
        fields[#fields + 1] = answer_field(w.p, txn)
        fields[#fields + 1] = w.answers[txn]
      end
      call_chunked('HSET', la, fields)
    end
    redis.call('PEXPIRE', la, ANSWER_MEMORY_MS)
  end
  -- A position moved by an ack frees what a lease held from deletion by age: a partition
  -- retention looks at later is brought forward to now (XX: only one with something to look at).
  local by_age = age_horizon(cfg) > 0
  for p, created in pairs(trims) do
    local trim_at = completed_trim_at(cfg, created)
    if trim_at then schedule_trim(base, p, trim_at) end
    if by_age then redis.call('ZADD', base .. 'trim', 'XX', 'LT', now, p) end
  end
  return out
end
