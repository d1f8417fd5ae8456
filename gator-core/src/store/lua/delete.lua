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
-- ARGV[1]    the due times (ms) of the scheduled jobs whose entries may wait in their minute's
--            list (later_lib.lua), space-separated, one per entry, `-` for one that cannot;
--            or '' when none can. Such an entry the set does not hold is removed from its list.
-- ARGV[2..]  the entries exactly as stored
-- Returns  one character per entry: '1' if it was removed, '0' if it was gone already
-- @unique_lib
-- @later_lib
local bad = wrong_type(KEYS[1], 'zset') if bad then return bad end
local prefix = queue_prefix(KEYS[1])
local dues = {}
for due in string.gmatch(ARGV[1], '%S+') do dues[#dues + 1] = tonumber(due) or false end
local removed = {}
for i = 2, #ARGV do
  local due = dues[i - 1]
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1
      or (due and later_remove(prefix, due, ARGV[i]) == 1) then
    removed[#removed + 1] = '1'
    local jid = jid_of(ARGV[i])
    if jid then
      redis.call('DEL', qkey(prefix, 'job', jid), qkey(prefix, 'payload', jid))
      unmark(prefix, jid)
    end
    unique_release(prefix, ARGV[i])
  else
    removed[#removed + 1] = '0'
  end
end
return table.concat(removed)
