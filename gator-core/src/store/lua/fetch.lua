#!lua flags=allow-oom
-- fetch.lua: move up to ARGV[1] jobs from the head of a queue to the tail of one process's
-- in-flight list, in one atomic step, and return them: a deep queue costs one round trip per
-- batch instead of one per job, and every job is in flight before anyone sees it.
--
-- The process must hold a live lease on the queue (Redis time): its entry in the queue's
-- lease set is the index through which recovery finds the in-flight list if it dies. Without
-- one nothing moves, so no job can land in a list nobody would look for.
--
-- The jobs are pushed 1,000 at a time: unpack() of more than about 8,000 values fails, and a
-- failure after the LPOP would lose what it popped (a script is not rolled back).
-- allow-oom: it only moves jobs, and workers must keep draining a Redis at maxmemory.
--
-- KEYS[1]  LIST  gator:{<queue>}:queue
-- KEYS[2]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[3]  ZSET  gator:{<queue>}:leases
-- ARGV[1]  the most jobs to move
-- ARGV[2]  the process id
-- Returns  the jobs moved, oldest first (an empty list if the queue is empty), or -1 if the
--          process holds no live lease on the queue (it must take one and fetch again), or -2
--          if the queue is controlled (flow_lib.lua): nothing moved, admit.lua fetches from it
local bad = wrong_type(KEYS[2], 'list') if bad then return bad end
if redis.call('EXISTS', qkey(queue_prefix(KEYS[1]), 'flow')) == 1 then
  return -2
end
local now = now_ms()
local expiry = redis.call('ZSCORE', KEYS[3], ARGV[2])
if not expiry or tonumber(expiry) <= now then
  return -1
end
local jobs = redis.call('LPOP', KEYS[1], ARGV[1])
if not jobs then
  return {}
end
for i = 1, #jobs, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(jobs, i, math.min(i + 999, #jobs)))
end
return jobs
