#!lua flags=allow-oom
-- delete.lua: delete entries from a scheduled, retry or dead set for good, with the status
-- records of the jobs it removed (set_status's keys), in one step: a job deleted by an admin is
-- `unknown` from then on, never a `retrying` or `scheduled` record left behind. Entries gone
-- already (a worker promoted them, another admin moved them) are left alone, and so are their
-- records, which describe where those jobs are now. A deleted unique job's lock
-- (unique_lib.lua) is released in the same step: a job that is gone holds no key.
-- allow-oom: it only removes, and at maxmemory freeing memory is what an operator needs.
--
-- KEYS[1]  ZSET  gator:{<queue>}:scheduled, gator:{<queue>}:retry or gator:{<queue>}:dead
-- (and each removed job's record, queued mark and side key (payload::aside), of the same
-- queue's prefix: same slot)
-- ARGV[1..]  the entries exactly as stored
-- Returns  one character per entry: '1' if it was removed, '0' if it was gone already
-- @unique_lib
local bad = wrong_type(KEYS[1], 'zset') if bad then return bad end
local prefix = queue_prefix(KEYS[1])
local removed = {}
for i = 1, #ARGV do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    removed[i] = '1'
    local jid = jid_of(ARGV[i])
    if jid then
      redis.call('DEL', qkey(prefix, 'job', jid), qkey(prefix, 'payload', jid))
      unmark(prefix, jid)
    end
    unique_release(prefix, ARGV[i])
  else
    removed[i] = '0'
  end
end
return table.concat(removed)
