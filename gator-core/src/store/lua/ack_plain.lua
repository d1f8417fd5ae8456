#!lua flags=allow-oom
-- ack_plain.lua: a success that starts no chain step, as the plain path's MULTI does it (LREM
-- of the job from its in-flight list, its `done` record in its bucket or its key, LMOVEs of
-- the next jobs), for when Redis refused that MULTI at maxmemory: a MULTI holding a write that
-- grows memory is aborted whole there, while a script with allow-oom still settles the job (and
-- its record grows memory by a few bytes, as the dead set's entries do). The worker uses it
-- only after such a refusal.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  LIST  gator:{<queue>}:queue
-- KEYS[3]  STRING  gator:{<queue>}:payload:<jid>, the job's side key: only for a job stored
--          aside (payload::aside), deleted if the job was in flight; absent for any other
-- ARGV[1]  the payload exactly as fetched
-- ARGV[2]  its status record, `done <at> <attempts> <result>` (see set_status)
-- ARGV[3]  how long (ms) a record with a key of its own is kept (a bucket's is ended by
--          finished_trim.lua)
-- ARGV[4]  how many of the queue's next jobs to move into the in-flight list
-- Returns  { 1 if the job was in flight else 0, job1, job2, ... }: the jobs moved, oldest first
-- Records  done
local removed = redis.call('LREM', KEYS[1], 1, ARGV[1])
-- Only if it was in flight: a recovered copy waits in the queue with its key.
if removed == 1 and KEYS[3] then redis.call('DEL', KEYS[3]) end
set_status(queue_prefix(KEYS[1]), ARGV[1], ARGV[2], tonumber(ARGV[3]))
local result = { removed }
if redis.call('TYPE', KEYS[2])['ok'] == 'list' then
  for _ = 1, tonumber(ARGV[4]) do
    local job = redis.call('LMOVE', KEYS[2], KEYS[1], 'LEFT', 'RIGHT')
    if not job then break end
    result[#result + 1] = job
  end
end
return result
