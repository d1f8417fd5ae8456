#!lua flags=allow-oom
-- release.lua: put one job of a live process's in-flight list back at the head of its queue,
-- atomically and only if it is still there. For a job the process fetched but never received
-- (the fetch's reply was lost: a timeout, or Redis killed after running it), which nothing in
-- the process would ever settle; and for a job the process hands back to the workers that run
-- it (see catalogue). On a controlled queue its units are released and it is parked
-- first in line (flow_lib.lua).
-- allow-oom: it only moves or removes jobs, and a Redis at maxmemory must still settle them.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  LIST  gator:{<queue>}:queue
-- ARGV[1]  the payload exactly as in the in-flight list
-- Returns  1 if the job was put back, 0 if it was no longer in flight
-- @flow_lib
local bad = wrong_queue(KEYS[2]) if bad then return bad end
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
free_units(KEYS[1], ARGV[1])
push_job(queue_prefix(KEYS[2]), ARGV[1], true)
return 1
