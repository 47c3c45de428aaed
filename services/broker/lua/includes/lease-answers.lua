--[[
  The answers recorded under a lease (la:<leaseId>, lua/README.md), so a resent or retried ack
  is answered as a repeat. Two kinds of field:
  - '<p>\n<txn>' -> answer, one per ack (answer_field);
  - '*<p>' -> a record (record_field): the acks of the batch that released the lease's hold on
    partition p, when they all got one answer (the usual whole-lease ack: one field of one
    string instead of one field per message, ~a tenth of an ack's Redis time in the listpack's
    inserts). Its text: the answer, then the transactionIds as a JSON array
    ('done:0["abc","x\ny z"]', lease-record.lua).
  The fields cannot collide: p is URI-encoded (no '\n'), so only a per-ack field holds one.
  An answer: 'done'|'failed'|'dlq' .. ':' .. dlq 0/1.
]]

-- The field of an ack's answer under its lease: the message as the client names it
-- (partition id, transactionId), so a retry is recognised even after retention removed the
-- message (completedRetentionSeconds 0).
local function answer_field(p, txn)
  return p .. '\n' .. txn
end

-- The field of partition p's record.
local function record_field(p)
  return '*' .. p
end

-- A record's answer and its transactionIds as a set.
local function record_members(text)
  local at = string.find(text, '[', 1, true)
  local members = {}
  for _, txn in ipairs(cjson.decode(string.sub(text, at))) do members[txn] = true end
  return string.sub(text, 1, at - 1), members
end
