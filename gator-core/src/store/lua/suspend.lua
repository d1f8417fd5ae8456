#!lua flags=allow-oom
-- suspend.lua: end a durable job's run parked until its time (a sleep, or a slice yielded):
-- take it out of its process's in-flight list, free its flow units, and add its payload (with
-- what it saved and the sleep recorded) to its queue's scheduled set, in one atomic step. Its
-- status record says `suspended <due> <reason>`; promote_due.lua puts it back on its queue on
-- Redis time (parked on a controlled queue, where it passes its limits again). No attempt is
-- counted. Nothing is written if the job was no longer in flight (recovered as an orphan).
-- allow-oom: it only moves a job.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  ZSET  gator:{<queue>}:scheduled
-- ARGV[1]  the payload as it is in flight now
-- ARGV[2]  the payload to park
-- ARGV[3]  when it wakes: a delay (ms) from now on Redis's clock, or a time (ms) with ARGV[4]
-- ARGV[4]  'in' for a delay, 'at' for a time
-- ARGV[5]  why (`sleep 2`, `slice 3`)
-- Returns  its due time (ms, its score) if parked, 0 if the job was not in flight
-- @flow_lib
local bad = wrong_type(KEYS[2], 'zset') if bad then return bad end
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
free_units(KEYS[1], ARGV[1])
local now = now_ms()
local due = tonumber(ARGV[3])
if ARGV[4] == 'in' then due = now + due end
redis.call('ZADD', KEYS[2], due, ARGV[2])
set_status(queue_prefix(KEYS[2]), ARGV[2], 'suspended ' .. due .. ' ' .. ARGV[5])
return due
