#!lua flags=allow-oom
-- clear_queue.lua: delete up to ARGV[1] jobs from the head of a queue's list, with their status
-- records and the unique locks they hold (unique_lib.lua), in one step: a cleared job is
-- `unknown` from then on and holds no key. The caller repeats it until it has removed what the
-- list held when it started, so no call blocks Redis for long.
-- allow-oom: it only removes, and at maxmemory freeing memory is what an operator needs.
--
-- KEYS[1]  LIST  gator:{<queue>}:queue
-- (and each removed job's record, queued mark and side key (payload::aside), of the same
-- queue's prefix: same slot)
-- ARGV[1]  the most jobs to remove in this call
-- Returns  how many were removed, or -1 if the queue is controlled (its key is the `controlled`
--          marker, its jobs are parked: they are cancelled one by one instead)
-- @unique_lib
local found = redis.call('TYPE', KEYS[1])['ok']
if found == 'string' then return -1 end
local bad = wrong_type(KEYS[1], 'list') if bad then return bad end
local jobs = redis.call('LPOP', KEYS[1], tonumber(ARGV[1]))
if not jobs then return 0 end
local prefix = queue_prefix(KEYS[1])
for _, job in ipairs(jobs) do
  local jid = jid_of(job)
  if jid then
    redis.call('DEL', qkey(prefix, 'job', jid), qkey(prefix, 'payload', jid))
    unmark(prefix, jid)
  end
  unique_release(prefix, job)
end
return #jobs
