-- later_lib.lua: jobs scheduled beyond the horizon, kept in one list per minute of their due
-- time instead of the scheduled set (store::later), inserted where a script says
-- `-- @later_lib`. A list entry costs its payload's bytes and a few more; a member of a sorted
-- set ~110 more (a skiplist node, a dict entry, their pointers). The scheduled set still holds
-- every job due within the horizon, so due jobs are promoted from it exactly as before: a
-- minute's list goes into the set (later_thaw) LATER_LEAD_MS before the minute starts.
--
-- later_push(prefix, due, payload)
--                        appends `<due - start>|<payload>` to the list of the minute that holds
--                        `due` (`<prefix>later:<start>`), its start in the index
--                        (`<prefix>later`, member and score) and the count (`<prefix>later_n`)
--                        one more.
-- later_slot(due)        the start of the minute `due` (ms) falls in, its name (the list's
--                        key suffix) and the head of an entry of that due time,
--                        `<due - start>|`: a list entry is that head and its payload.
-- later_split(entry, start)   the due time and payload of a list entry of minute `start`.
-- later_thaw(prefix, scheduled, upto, limit)
--                        moves up to `limit` entries of the minutes that start at or before
--                        `upto` into the sorted set `scheduled`, each scored by its due time,
--                        earliest minute first; returns how many moved, and true if more wait.
-- later_taken(prefix, start, n)   the index and the count after `n` entries left minute
--                        `start`'s list (the list's key gone once empty).
-- later_next(prefix)     the start of the earliest minute, or nil.
-- later_remove(prefix, due, payload)
--                        removes the entry of `payload`, due at `due` (ms, a number or its
--                        text), from its minute's list; 1 if the list held it, else 0. What an
--                        action on a scheduled job calls when the set does not hold the entry:
--                        one script finds it in either, so no job is ever between the two.
local LATER_SLICE_MS = 60000
local LATER_LEAD_MS = 10000
local function later_slot(due)
  local start = due - due % LATER_SLICE_MS
  return start, string.format('%d', start), string.format('%d', due - start) .. '|'
end
local function later_push(prefix, due, payload)
  local start, name, head = later_slot(due)
  redis.call('RPUSH', qkey(prefix, 'later_slice', name), head .. payload)
  redis.call('ZADD', qkey(prefix, 'later', ''), start, name)
  redis.call('INCR', qkey(prefix, 'later_count', ''))
end
local function later_split(entry, start)
  local bar = string.find(entry, '|', 1, true)
  return tonumber(start) + tonumber(string.sub(entry, 1, bar - 1)), string.sub(entry, bar + 1)
end
local function later_taken(prefix, start, n)
  if redis.call('EXISTS', qkey(prefix, 'later_slice', start)) == 0 then
    redis.call('ZREM', qkey(prefix, 'later', ''), start)
  end
  local count = qkey(prefix, 'later_count', '')
  if redis.call('DECRBY', count, n) <= 0 then redis.call('DEL', count) end
end
local function later_thaw(prefix, scheduled, upto, limit)
  local index = qkey(prefix, 'later', '')
  local moved = 0
  while moved < limit do
    local first = redis.call('ZRANGE', index, '-inf', upto, 'BYSCORE', 'LIMIT', 0, 1)[1]
    if not first then return moved, false end
    local list = qkey(prefix, 'later_slice', first)
    local entries = redis.call('LRANGE', list, 0, limit - moved - 1)
    local scored = {}
    for _, entry in ipairs(entries) do
      local due, payload = later_split(entry, first)
      scored[#scored + 1] = string.format('%d', due)
      scored[#scored + 1] = payload
    end
    if #entries > 0 then
      redis.call('ZADD', scheduled, unpack(scored))
      redis.call('LTRIM', list, #entries, -1)
    end
    later_taken(prefix, first, #entries)
    moved = moved + #entries
  end
  return moved, #redis.call('ZRANGE', index, '-inf', upto, 'BYSCORE', 'LIMIT', 0, 1) > 0
end
local function later_next(prefix)
  local first = redis.call('ZRANGE', qkey(prefix, 'later', ''), 0, 0, 'WITHSCORES')
  if #first > 0 then return tonumber(first[2]) end
end
local function later_remove(prefix, due, payload)
  local _, name, head = later_slot(tonumber(due))
  if redis.call('LREM', qkey(prefix, 'later_slice', name), 1, head .. payload) == 0 then
    return 0
  end
  later_taken(prefix, name, 1)
  return 1
end
