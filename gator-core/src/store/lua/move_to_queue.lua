#!lua flags=allow-oom
-- move_to_queue.lua: take one entry out of a queue's scheduled, retry or dead set and push a
-- (possibly rewritten) payload to the queue, in one atomic step: run now, or retry from dead.
-- The push happens only if the entry was still there, so two admins clicking "retry" at
-- once enqueue the job once. On a controlled queue the job is parked (flow_lib.lua).
-- allow-oom: it only moves or removes jobs, and a Redis at maxmemory must still settle them.
--
-- KEYS[1]  ZSET  gator:{<queue>}:scheduled, gator:{<queue>}:retry or gator:{<queue>}:dead
-- KEYS[2]  LIST  gator:{<queue>}:queue
-- ARGV[1]  the entry exactly as stored in the set
-- ARGV[2]  the payload to enqueue (the entry with attempts reset, for a retry from dead)
-- ARGV[3]  (optional) a scheduled job's due time (ms) when its entry may wait in its minute's
--          list (later_lib.lua): taken from there if the set does not hold it
-- Returns  1 if the entry was moved, 0 if it was no longer in the set (or its list)
-- @flow_lib
-- @later_lib
local bad = wrong_queue(KEYS[2]) if bad then return bad end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0
    and not (ARGV[3] and later_remove(queue_prefix(KEYS[1]), ARGV[3], ARGV[1]) == 1) then
  return 0
end
push_job(queue_prefix(KEYS[2]), ARGV[2], false)
return 1
