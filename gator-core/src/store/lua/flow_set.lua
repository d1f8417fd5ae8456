#!lua flags=allow-oom
-- flow_set.lua: change a queue's flow settings (pause, limit, shares, rate limiters, aging,
-- order), making the queue controlled first (see flow_lib.lua). Parking keys that waited for
-- a share are re-examined and waiting workers are woken, so a raised limit or a resume takes
-- effect at once. allow-oom: a Redis at maxmemory must still be resumable.
--
-- KEYS[1]  HASH  gator:{<queue>}:flow
-- ARGV     field, value, field, value, ...: an empty value deletes the field
-- Returns  1
-- @flow_lib
local prefix = queue_prefix(KEYS[1])
make_controlled(prefix)
for i = 1, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
local blocked = qkey(prefix, 'blocked')
for _, pk in ipairs(redis.call('SMEMBERS', blocked)) do
  redis.call('SREM', blocked, pk)
  ready_head(prefix, pk)
end
for _ = 1, 16 do signal(prefix) end
return 1
