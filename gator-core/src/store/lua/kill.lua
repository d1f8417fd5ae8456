#!lua
-- kill.lua: record that a job will not run again: take it out of its process's in-flight
-- list, add it to its queue's dead set, and trim the set by age and size, in one atomic step,
-- so the cap holds however many workers kill jobs at once. Nothing is written if the job was
-- no longer in flight (recovered as an orphan and queued again).
--
-- KEYS[1]  ZSET  gator:{<queue>}:dead (score = time of death, ms)
-- KEYS[2]  LIST  gator:{<queue>}:inflight:<process id>
-- ARGV[1]  now, ms since the Unix epoch
-- ARGV[2]  the dead-set entry (the payload with its error, or a wrapper around unreadable text)
-- ARGV[3]  the most entries to keep; the oldest go first
-- ARGV[4]  entries that died before this time (ms) are removed
-- ARGV[5]  the payload exactly as fetched
-- Returns  the number of entries left in the dead set, or -1 if the job was not in flight
if redis.call('LREM', KEYS[2], 1, ARGV[5]) == 0 then
  return -1
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[4])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[3]) + 1))
return redis.call('ZCARD', KEYS[1])
