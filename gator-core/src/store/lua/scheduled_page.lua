#!lua flags=no-writes
-- scheduled_page.lua: a page of a queue's scheduled jobs, those of the scheduled set and those
-- of the minutes' lists beyond the horizon (later_lib.lua) merged, in one read-only step on the
-- queue's slot. A listed job of a minute's list stands at its minute's start (its due time is
-- returned beside it), after the set's entries of that same score, in the order the list holds
-- them: entries shown in an order that a page's cursor (score, then how many of that score)
-- can go on from, reading at most ARGV[4] entries of the set and of the lists.
--
-- KEYS[1]  ZSET  gator:{<queue>}:scheduled
-- ARGV[1]  the lowest score: '-inf', '<score>' or '(<score>' (above it only)
-- ARGV[2]  the highest score: '+inf' or '<score>'
-- ARGV[3]  how many entries at the lowest score (an inclusive one) were shown already
-- ARGV[4]  the most entries to return
-- Returns  { member, score, due, ... } lowest score first (scores and due times as text)
-- @later_lib
local bad = wrong_type(KEYS[1], 'zset') if bad then return bad end
local prefix = queue_prefix(KEYS[1])
local min, max, skip, count = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local zskip, lskip = skip, 0
if skip > 0 and min ~= '-inf' and string.sub(min, 1, 1) ~= '(' then
  local ties = redis.call('ZCOUNT', KEYS[1], min, min)
  if skip > ties then zskip, lskip = ties, skip - ties end
end
local set = redis.call('ZRANGE', KEYS[1], min, max, 'BYSCORE', 'LIMIT', zskip, count, 'WITHSCORES')
local listed = {}
local minutes = redis.call('ZRANGE', qkey(prefix, 'later', ''), min, max, 'BYSCORE', 'LIMIT', 0, count)
for _, start in ipairs(minutes) do
  if #listed >= count then break end
  local from = 0
  if lskip > 0 and tonumber(start) == tonumber(min) then from = lskip end
  local list = qkey(prefix, 'later_slice', start)
  for _, entry in ipairs(redis.call('LRANGE', list, from, from + count - #listed - 1)) do
    local due, payload = later_split(entry, start)
    listed[#listed + 1] = { payload, start, string.format('%d', due) }
  end
end
local page, i, j = {}, 1, 1
while #page < 3 * count and (i <= #set or j <= #listed) do
  if j > #listed or (i <= #set and tonumber(set[i + 1]) <= tonumber(listed[j][2])) then
    page[#page + 1], page[#page + 2], page[#page + 3] = set[i], set[i + 1], set[i + 1]
    i = i + 2
  else
    local e = listed[j]
    page[#page + 1], page[#page + 2], page[#page + 3] = e[1], e[2], e[3]
    j = j + 1
  end
end
return page
