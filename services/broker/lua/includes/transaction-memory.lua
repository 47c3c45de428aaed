-- How long the records of a transaction across slots outlive its outcome (seconds): a resent
-- script, and recovery, find what happened.
local TRANSACTION_MEMORY_S = 86400
