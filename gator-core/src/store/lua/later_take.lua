#!lua flags=allow-oom
-- later_take.lua: bring one entry a page of the scheduled set listed from a minute's list
-- (store::later) back into the scheduled set, so that run now and delete act on it there as on
-- any scheduled job. A no-op for an entry not in the list (one in the set already, or gone).
-- allow-oom: it only moves a job.
--
-- KEYS[1]  ZSET  gator:{<queue>}:scheduled
-- ARGV[1]  the entry's due time (ms)
-- ARGV[2]  the payload
-- Returns  1 if it moved, 0 if it was not in the list
-- @later_lib
local bad = wrong_type(KEYS[1], 'zset') if bad then return bad end
local prefix = queue_prefix(KEYS[1])
local due = tonumber(ARGV[1])
local start = string.format('%d', due - due % LATER_SLICE_MS)
local entry = string.format('%d', due - tonumber(start)) .. '|' .. ARGV[2]
if redis.call('LREM', qkey(prefix, 'later_slice', start), 1, entry) == 0 then return 0 end
redis.call('ZADD', KEYS[1], string.format('%d', due), ARGV[2])
later_taken(prefix, start, 1)
return 1
