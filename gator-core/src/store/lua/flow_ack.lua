#!lua flags=allow-oom
-- flow_ack.lua: settle the success of a job admitted from a controlled queue: take it out of
-- its process's in-flight list and release the units it held, in one step, so a unit is never
-- held by a job that is done. (A chain step with a next step goes through ack.lua, which does
-- the same.) Nothing happens if the job was no longer in flight: recovery released it.
-- allow-oom: it only removes a job.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  STRING  gator:{<queue>}:payload:<jid>, the job's side key: only for a job stored
--          aside (payload::aside), deleted with it; absent for any other
-- ARGV[1]  the payload exactly as fetched
-- ARGV[2]  `<attempts> <result JSON>` (the result empty for none): its status record is
--          `done <now> ` and this
-- ARGV[3]  how long (ms) the status record is kept
-- Returns  1 if acked, 0 if the job was not in flight
-- @flow_lib
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
if KEYS[2] then redis.call('DEL', KEYS[2]) end
free_units(KEYS[1], ARGV[1])
set_status(queue_prefix(KEYS[1]), ARGV[1], 'done ' .. now_ms() .. ' ' .. ARGV[2], tonumber(ARGV[3]))
return 1
