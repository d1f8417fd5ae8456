#!lua
-- recover.lua: put every job in one process's in-flight list for a queue back at the head of
-- the queue, oldest fetched first, in one atomic step. Used for the in-flight records of a
-- process whose heartbeat expired (it died mid-job), and by a process shutting down for its
-- own. Two workers recovering the same process at once move each job once.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  LIST  gator:{<queue>}:queue
-- ARGV     none
-- Returns  the number of jobs put back
local moved = 0
while redis.call('LMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT') do
  moved = moved + 1
end
return moved
