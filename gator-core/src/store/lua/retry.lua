#!lua
-- retry.lua: record that a job failed and runs again later: take it out of its process's
-- in-flight list and add its updated payload to the retry set, in one atomic step. Nothing is
-- written if the job was no longer in flight (recovered as an orphan and queued again).
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  ZSET  gator:{<queue>}:retry
-- ARGV[1]  the payload exactly as fetched
-- ARGV[2]  the updated payload (attempt, error, failed_at, ...)
-- ARGV[3]  when it runs again, ms since the Unix epoch (its score)
-- Returns  1 if recorded, 0 if the job was not in flight
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
return 1
