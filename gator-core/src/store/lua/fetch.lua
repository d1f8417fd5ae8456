#!lua
-- fetch.lua: move up to ARGV[1] jobs from the head of a queue to the tail of one process's
-- in-flight list, in one atomic step, and return them: a deep queue costs one round trip per
-- batch instead of one per job, and every job is in flight before anyone sees it.
--
-- KEYS[1]  LIST  gator:{<queue>}:queue
-- KEYS[2]  LIST  gator:{<queue>}:inflight:<process id>
-- ARGV[1]  the most jobs to move
-- Returns  the jobs moved, oldest first (an empty list if the queue is empty)
local jobs = redis.call('LPOP', KEYS[1], ARGV[1])
if not jobs then
  return {}
end
redis.call('RPUSH', KEYS[2], unpack(jobs))
return jobs
