-- A queue's options (the cfg hash, configure-1.lua), with Queen's defaults for those not set.
local function queue_config(base)
  local v = redis.call('HMGET', base .. 'cfg', 'leaseTime', 'retryLimit', 'retryDelay',
    'delayedProcessing', 'windowBuffer', 'maxSize', 'ttl', 'retentionSeconds',
    'completedRetentionSeconds', 'deadLetterQueue', 'retentionEnabled', 'maxWaitTimeSeconds',
    'bridgeTopic', 'bridgeOn', 'bridgePrivate')
  return {
    leaseTime = tonumber(v[1]) or 300,
    retryLimit = tonumber(v[2]) or 3,
    retryDelay = tonumber(v[3]) or 0,
    delayedProcessing = tonumber(v[4]) or 0,
    windowBuffer = tonumber(v[5]) or 0,
    maxSize = tonumber(v[6]) or 0,
    ttl = tonumber(v[7]) or 0,
    retentionSeconds = tonumber(v[8]) or 0,
    completedRetentionSeconds = tonumber(v[9]) or 0,
    deadLetterQueue = v[10] ~= 'false',
    retentionEnabled = v[11] == 'true',
    maxWaitTimeSeconds = tonumber(v[12]) or 0,
    -- The queue -> topic bridge (src/outbox.ts): '' when the queue is not bridged.
    bridgeTopic = v[13] or '',
    bridgeOn = v[14] or 'push',
    bridgePrivate = v[15] == 'true',
  }
end
