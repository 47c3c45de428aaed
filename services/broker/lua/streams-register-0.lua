--[[
  Registers a streams query by name (docs/broker.md, "Streams"): idempotent for the same
  config_hash; a changed hash is a conflict unless reset, which deletes the query's state and
  keeps its id. Takes no KEYS: the query index is global and the state lives under the query's
  own hash tag (standalone Redis only, like the cycle).
  ARGV[1]  streams base: <prefix>streams:
  ARGV[2]  name   ARGV[3] source queue   ARGV[4] sink queue ('' = none)   ARGV[5] config_hash
  ARGV[6]  reset ('1'|'0')
  ARGV[7]  request id: a fresh UUID from the node, the query's id when this request creates it
  ARGV[8]  max registered queries
  Keys: queries (hash name -> JSON record), ids (hash id -> name); per query under
  {<id>}: shards (set), s:<shard> (hash key -> '<updatedMs> <value JSON>'), b (hash shard ->
  bytes), cy:<cycleId> (committed cycle answers); stats (hash r:<id>, b:<id>: rows, bytes).
  Returns JSON text {"success":true,"query_id","fresh","reset"} or {"success":false,
  "conflict":"hash"|"full","query_id"?,"error"}.
  Resend-safe (shared/redis/README.md): the record keeps the request id that created it
  (createdBy) and the one that last reset it (resetBy); a second run of the same request finds
  its own id there and answers what the first run did, without deleting state again.
]]
local sbase, name, source, sink, hash = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local reset, request_id, max_queries = ARGV[6] == '1', ARGV[7], tonumber(ARGV[8])
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))

local raw = redis.call('HGET', sbase .. 'queries', name)
if not raw then
  if redis.call('HLEN', sbase .. 'queries') >= max_queries then
    return cjson.encode({ success = false, conflict = 'full',
      error = 'at most ' .. max_queries .. ' streams queries may be registered' })
  end
  local record = { id = request_id, source = source, sink = sink, hash = hash, createdAt = now,
    updatedAt = now, createdBy = request_id, resetBy = '' }
  redis.call('HSET', sbase .. 'queries', name, cjson.encode(record))
  redis.call('HSET', sbase .. 'ids', request_id, name)
  return cjson.encode({ success = true, query_id = request_id, fresh = true, reset = false })
end

local record = cjson.decode(raw)
if record.createdBy == request_id or record.resetBy == request_id then
  return cjson.encode({ success = true, query_id = record.id, fresh = record.createdBy == request_id,
    reset = record.resetBy == request_id })
end
local did_reset = false
if record.hash ~= hash then
  if not reset then
    return cjson.encode({ success = false, conflict = 'hash', query_id = record.id,
      error = "config_hash mismatch: operator chain changed for queryId '" .. name ..
        "'. Pass reset:true to wipe existing state, or use a new queryId." })
  end
  local qbase = sbase .. '{' .. record.id .. '}:'
  for _, shard in ipairs(redis.call('SMEMBERS', qbase .. 'shards')) do
    redis.call('UNLINK', qbase .. 's:' .. shard)
  end
  redis.call('DEL', qbase .. 'shards', qbase .. 'b')
  redis.call('HDEL', sbase .. 'stats', 'r:' .. record.id, 'b:' .. record.id)
  record.hash = hash
  record.resetBy = request_id
  did_reset = true
end
record.source = source
record.sink = sink
record.updatedAt = now
redis.call('HSET', sbase .. 'queries', name, cjson.encode(record))
return cjson.encode({ success = true, query_id = record.id, fresh = false, reset = did_reset })
