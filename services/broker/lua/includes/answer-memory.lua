-- How long (ms) after the last ack under a lease its answers are kept: a resend comes within
-- ms, a client retry after a reset within seconds; a fixed window keeps the memory at about
-- (leases acked per second) x 60 small hashes, whatever the leaseTime.
local ANSWER_MEMORY_MS = 60000
