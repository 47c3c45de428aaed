-- Appends an entry to the stream KEYS[1] .. 's' on the clock the loader chose, and returns the
-- clock's milliseconds and the entry's id.
-- KEYS[1] the base key
--@include clock
--@include entry-id
local id = redis.call('XADD', KEYS[1] .. 's', new_entry_id(), 'f', 'v')
return { string.format('%.0f', now_ms()), id }
