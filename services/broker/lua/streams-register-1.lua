--[[
  Registers a streams query by name (docs/broker-streams.md, "Streams"): idempotent for the same
  config_hash; a changed hash is a conflict unless reset, which starts a new state generation
  and keeps the query's id (the node then drops the older generations: streams-drop-2.lua).
  KEYS[1]   registryBase: <prefix>streams: (<prefix>{streams}: where slots are enforced); the
            script touches KEYS[1] .. 'queries' (hash name -> JSON record) and .. 'ids' (hash
            id -> name) only
  ARGV[1]   name: the query's name
  ARGV[2]   source: the source queue
  ARGV[3]   sink: the sink queue ('' = none)
  ARGV[4]   configHash: the hash of the operator chain
  ARGV[5]   reset: '1' to start a new state generation on a changed hash, else '0'
  ARGV[6]   requestId: a fresh UUID from the node, the query's id when this request creates it
  ARGV[7]   maxQueries: max registered queries
  ARGV[8]   sourceTag: hash tag of the source queue's slot where slots are enforced (Redis
            Cluster), else ''
  The record: id, source, sink, hash, createdAt, updatedAt, createdBy, resetBy, gen (state
  generation, absent = 0), home (the queue whose slot holds the state: the source when the
  state was started), homeTag, previousHome (the home before a reset moved it, to drop there).
  Returns JSON text {"success":true,"query_id","fresh","reset","gen","home","previous_home"?}
  or {"success":false,"conflict":"hash"|"full"|"slot","query_id"?,"error"}.
  Resend-safe: per request id (shared/redis/README.md). The record keeps the request id that
  created it (createdBy) and the one that last reset it (resetBy); a second run of the same
  request finds its own id there and answers what the first run did, without starting another
  generation.
]]
--@include clock

local rbase = KEYS[1]
local name, source, sink, hash = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local reset, request_id, max_queries, source_tag = ARGV[5] == '1', ARGV[6], tonumber(ARGV[7]), ARGV[8]
local now = string.format('%.0f', now_ms())

local function answer(record, fresh, did_reset)
  return cjson.encode({ success = true, query_id = record.id, fresh = fresh, reset = did_reset,
    gen = record.gen or 0, home = record.home or record.source, previous_home = record.previousHome })
end

local raw = redis.call('HGET', rbase .. 'queries', name)
if not raw then
  if redis.call('HLEN', rbase .. 'queries') >= max_queries then
    return cjson.encode({ success = false, conflict = 'full',
      error = 'at most ' .. max_queries .. ' streams queries may be registered' })
  end
  local record = { id = request_id, source = source, sink = sink, hash = hash, createdAt = now,
    updatedAt = now, createdBy = request_id, resetBy = '', gen = 0, home = source, homeTag = source_tag }
  redis.call('HSET', rbase .. 'queries', name, cjson.encode(record))
  redis.call('HSET', rbase .. 'ids', request_id, name)
  return answer(record, true, false)
end

local record = cjson.decode(raw)
if record.createdBy == request_id or record.resetBy == request_id then
  return answer(record, record.createdBy == request_id, record.resetBy == request_id)
end
-- Where slots are enforced the state lives in its home queue's slot (one script with the
-- source's ack): a source in another slot can only start from empty state.
local moved = source_tag ~= '' and (record.homeTag or '') ~= source_tag
local did_reset = false
if record.hash ~= hash then
  if not reset then
    return cjson.encode({ success = false, conflict = 'hash', query_id = record.id,
      error = "config_hash mismatch: operator chain changed for queryId '" .. name ..
        "'. Pass reset:true to wipe existing state, or use a new queryId." })
  end
  record.gen = (record.gen or 0) + 1
  if moved then
    record.previousHome = record.home or record.source
    record.home = source
    record.homeTag = source_tag
  end
  record.hash = hash
  record.resetBy = request_id
  did_reset = true
elseif moved then
  return cjson.encode({ success = false, conflict = 'slot', query_id = record.id,
    error = "query '" .. name .. "' keeps its state in the Redis Cluster slot of queue '" ..
      (record.home or record.source) .. "': source queue '" .. source ..
      "' is in another slot. Register it with a changed config_hash and reset:true to start its state there, or use a new queryId." })
end
record.source = source
record.sink = sink
record.updatedAt = now
redis.call('HSET', rbase .. 'queries', name, cjson.encode(record))
return answer(record, false, did_reset)
