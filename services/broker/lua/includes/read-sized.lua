--[[
  Stream reads sized to their entries. Redis hands each redis.call of a script its whole reply
  in one buffer that grows 1 MiB at a time, so one call's time grows with the square of its
  reply: one XRANGE of 100 entries of 1 MiB took 2.1 s, against 0.14 s one entry at a time
  (docs/broker-api.md, "Large messages"). Every read of a run of entries goes through read_sized:
  it asks for one entry until this run of the script has seen some, then for as many as fit
  READ_BYTES at the average size seen, and never more than READ_COUNT (a Lua table per entry).
  read_seen.bytes is what the script has read so far, for callers bounded by bytes.
]]
local READ_BYTES = 1048576
local READ_COUNT = 1000
local read_seen = { entries = 0, bytes = 0 }

-- An entry's size: its record (one field), or the values of its fields (an earlier release's
-- message, a dead letter, an outbox intent).
local function entry_bytes(e)
  local f = e[2]
  if #f == 2 then return #f[2] end
  local n = 0
  for i = 2, #f, 2 do n = n + #f[i] end
  return n
end

-- One XRANGE or XREVRANGE of `range_key` between `from` and `to` (as the command takes them),
-- `want` entries at most, fewer while entries are large. Returns the entries and the count
-- asked: fewer entries than asked means the range ends there. The name `range_key` is kept for
-- keys only (test/lua-keys.ts follows key names across the script).
local function read_sized(cmd, range_key, from, to, want)
  local count = 1
  if read_seen.entries > 0 then
    count = math.floor(READ_BYTES * read_seen.entries / math.max(read_seen.bytes, 1))
  end
  count = math.max(1, math.min(want, count, READ_COUNT))
  local entries = redis.call(cmd, range_key, from, to, 'COUNT', count)
  for _, e in ipairs(entries) do
    read_seen.bytes = read_seen.bytes + entry_bytes(e)
  end
  read_seen.entries = read_seen.entries + #entries
  return entries, count
end
