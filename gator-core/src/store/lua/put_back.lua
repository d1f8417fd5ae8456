#!lua flags=allow-oom
-- put_back.lua: put every job of a process's own in-flight list for a queue back at the head of
-- the queue, oldest fetch first, and (with ARGV[2]) give up its lease on the queue, in one
-- atomic step: a stopping worker deregisters from a queue only with nothing left in flight
-- there. Whatever it could not put back stays leased, and the fleet recovers it once the lease
-- expires.
-- allow-oom: it only moves jobs; a Redis at maxmemory must not strand them.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  LIST  gator:{<queue>}:queue
-- KEYS[3]  ZSET  gator:{<queue>}:leases
-- ARGV[1]  the process id
-- ARGV[2]  1 to give up the lease, 0 to keep it (a fetch may still land in the list)
-- Returns  the number of jobs put back
local moved = 0
while redis.call('LMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT') do
  moved = moved + 1
end
if ARGV[2] == '1' then
  redis.call('ZREM', KEYS[3], ARGV[1])
end
return moved
