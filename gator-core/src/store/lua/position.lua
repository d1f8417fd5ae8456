#!lua
-- position.lua: where a queued job stands in its queue's list (store::position::find), in
-- bounded work whatever the list's length: a binary search by jid, then one window around
-- where it should be. A plain queue is a FIFO list whose jobs were pushed in jid order (a
-- jid is a UUIDv7: it sorts by creation time), so the search lands on the job; a job out of
-- order (put back by recovery, promoted from the retry set, or from a producer whose clock
-- is behind) is found if it stands within WINDOW of where its jid sorts, else the answer is
-- an estimate. LINDEX walks the list's nodes (a few dozen jobs each) from the nearer end:
-- at most log2(n) + 1 of them, then an LRANGE of 2 * WINDOW + 1.
--
-- KEYS[1]  LIST  gator:{<queue>}:queue
-- ARGV[1]  the jid
-- Returns  {ahead, exact, length}: the jobs before it, 1 if the job was found there (else
--          0: `ahead` is where its jid sorts), and the list's length; {-1, 0, 0} if the key
--          is not a list (a controlled queue's marker)
local WINDOW = 64
if redis.call('TYPE', KEYS[1]).ok ~= 'list' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return {-1, 0, 0} end
  return {0, 0, 0}
end
local target = ARGV[1]
local n = redis.call('LLEN', KEYS[1])
local function jid_of(payload)
  return string.match(payload, '^{"jid":"([^"\\]*)"') or ''
end
local lo, hi = 0, n - 1
while lo <= hi do
  local mid = math.floor((lo + hi) / 2)
  local jid = jid_of(redis.call('LINDEX', KEYS[1], mid) or '')
  if jid == target then return {mid, 1, n} end
  if jid < target then lo = mid + 1 else hi = mid - 1 end
end
local from = math.max(0, lo - WINDOW)
local near = redis.call('LRANGE', KEYS[1], from, lo + WINDOW)
for i, payload in ipairs(near) do
  if jid_of(payload) == target then return {from + i - 1, 1, n} end
end
return {lo, 0, n}
