#!lua flags=allow-oom
-- put_back.lua: put every job of a process's own in-flight list for a queue back at the head of
-- the queue, oldest fetch first, and (with ARGV[2]) give up its lease on the queue, in one
-- atomic step: a stopping worker deregisters from a queue only with nothing left in flight
-- there. Whatever it could not put back stays leased, and the fleet recovers it once the lease
-- expires. On a controlled queue the process's units are released and its jobs parked first in
-- line (flow_lib.lua).
-- allow-oom: it only moves jobs; a Redis at maxmemory must not strand them.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  LIST  gator:{<queue>}:queue
-- KEYS[3]  ZSET  gator:{<queue>}:leases
-- ARGV[1]  the process id
-- ARGV[2]  1 to give up the lease, 0 to keep it (a fetch may still land in the list)
-- Returns  the number of jobs put back
-- @flow_lib
local moved = 0
local prefix = queue_prefix(KEYS[2])
if is_controlled(prefix) then
  free_all_units(prefix, ARGV[1])
  moved = park_all_first(prefix, KEYS[1], now_ms())
else
  while true do
    local job = redis.call('LMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT')
    if not job then break end
    set_status(prefix, job, 'queued')
    moved = moved + 1
  end
end
if ARGV[2] == '1' then
  redis.call('ZREM', KEYS[3], ARGV[1])
end
return moved
