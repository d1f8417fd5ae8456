#!lua flags=no-writes
-- later_range.lua: up to ARGV[3] jobs of a queue's minutes' lists (later_lib.lua), from the
-- ARGV[2]-th entry of the ARGV[1]-th minute on (earliest minute first), in one read-only step:
-- what a search reads of the jobs scheduled beyond the horizon, a bounded range at a time.
--
-- KEYS[1]  ZSET  gator:{<queue>}:later
-- ARGV[1]  the minute's rank in the index
-- ARGV[2]  the index in its list
-- ARGV[3]  the most entries to return
-- Returns  { payload, due, rank, index after it, ... } (all as text)
-- @later_lib
local bad = wrong_type(KEYS[1], 'zset') if bad then return bad end
local prefix = queue_prefix(KEYS[1])
local rank, from, count = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
while #out < 4 * count do
  local start = redis.call('ZRANGE', KEYS[1], rank, rank)[1]
  if not start then break end
  local want = count - #out / 4
  local entries = redis.call('LRANGE', qkey(prefix, 'later_slice', start), from, from + want - 1)
  for i, entry in ipairs(entries) do
    local due, payload = later_split(entry, start)
    out[#out + 1], out[#out + 2] = payload, string.format('%d', due)
    out[#out + 1], out[#out + 2] = tostring(rank), string.format('%d', from + i)
  end
  if #entries < want then rank, from = rank + 1, 0 end
end
return out
