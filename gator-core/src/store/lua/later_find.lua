#!lua flags=no-writes
-- later_find.lua: a job scheduled beyond the horizon, found by its jid in the list of the minute
-- its status record's due time falls in (store::later), read-only: what an action by jid or a
-- job's page finds when the scheduled set does not hold it (an action's script then takes it
-- from the list, later_remove in later_lib.lua). A call reads at most ARGV[4] entries of the list from ARGV[3] on, so a
-- minute of millions of jobs is searched a bounded step at a time; the caller goes on from the
-- index it returns.
--
-- KEYS[1]  ZSET  gator:{<queue>}:scheduled (names the slot and the prefix)
-- ARGV[1]  the jid
-- ARGV[2]  its due time (ms), as its status record says it
-- ARGV[3]  the index in the minute's list to read from
-- ARGV[4]  the most entries to read
-- Returns  { 1, payload } if found; { 0 } if not in the list; { 2, index to go on from } if
--          entries are left to read
-- @later_lib
local prefix = queue_prefix(KEYS[1])
local _, name, head = later_slot(tonumber(ARGV[2]))
local list = qkey(prefix, 'later_slice', name)
local bad = wrong_type(list, 'list') if bad then return bad end
local from, read = tonumber(ARGV[3]), tonumber(ARGV[4])
local entries = redis.call('LRANGE', list, from, from + read - 1)
for _, entry in ipairs(entries) do
  if string.sub(entry, 1, #head) == head then
    local payload = string.sub(entry, #head + 1)
    if jid_of(payload) == ARGV[1] then return { 1, payload } end
  end
end
if #entries < read then return { 0 } end
return { 2, string.format('%d', from + read) }
