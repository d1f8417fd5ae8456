#!lua flags=no-writes
-- locate.lua: the entry of a job in a scheduled, retry or dead set, found from what its status
-- record says (store::locate), in bounded work whatever the set's size, in one read-only step on
-- the queue's slot. The record gives the entry's score (`scheduled <due>`, `retrying <due> ...`,
-- `dead <at> ...`, `expired <at> ... dead`: each written in the step that added the entry, with
-- its score), so the entry is among the members of that one score: two ZCOUNTs find where they
-- stand. Among a few of them, each is read and its jid compared; among many (jobs scheduled for
-- one instant), a binary search by rank: members of one score are ordered by their bytes, and a
-- payload Gator wrote starts with `{"jid":"<jid>"`, so ZRANGE of one rank at a time lands on it
-- in log2(ties) + 1 reads. Bytes are compared one by one: Lua's `<` on strings follows the
-- server's locale.
--
-- KEYS[1]  ZSET  gator:{<queue>}:scheduled, gator:{<queue>}:retry or gator:{<queue>}:dead
-- ARGV[1]  the jid
-- ARGV[2]  the entry's score, as its status record says it (ms)
-- Returns  the entry exactly as stored, or nil if it is not there with that score
local bad = wrong_type(KEYS[1], 'zset') if bad then return bad end
-- Up to this many members of one score are read whole: a payload another producer wrote may
-- not start with its jid.
local FEW = 16
local jid, score = ARGV[1], ARGV[2]
local before = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. score)
local ties = redis.call('ZCOUNT', KEYS[1], score, score)
if ties == 0 then return nil end
if ties <= FEW then
  for _, member in ipairs(redis.call('ZRANGE', KEYS[1], before, before + ties - 1)) do
    if jid_of(member) == jid then return member end
  end
  return nil
end
local head = '{"jid":"' .. jid .. '"'
-- Whether `member` sorts before `head` (by bytes, as Redis orders members of one score).
local function sorts_before(member)
  for i = 1, #head do
    local a, b = string.byte(member, i), string.byte(head, i)
    if a == nil then return true end
    if a ~= b then return a < b end
  end
  return false
end
local lo, hi = before, before + ties
while lo < hi do
  local mid = math.floor((lo + hi) / 2)
  if sorts_before(redis.call('ZRANGE', KEYS[1], mid, mid)[1] or '') then
    lo = mid + 1
  else
    hi = mid
  end
end
if lo < before + ties then
  local member = redis.call('ZRANGE', KEYS[1], lo, lo)[1] or ''
  if string.sub(member, 1, #head) == head then return member end
end
return nil
