#!lua
-- position.lua: where a queued job stands (store::position::find), in bounded work whatever
-- the queue's length, in one read-only step on the queue's slot.
--
-- Parked (a controlled queue, flow_lib.lua): park wrote where the job is into its status
-- record, `queued <seq> <score> critical` or `queued <seq> <score> held <parking key>`, so the
-- jobs before it are the ones of lower score in that set (ZCOUNT) and, among equal scores
-- (ordered by member: its 16-digit seq, then the payload, which starts with the jid), the
-- ones before its member, found by a binary search by rank: ZRANGE of one rank at a time,
-- log2(ties) + 1 of them. The member is checked (seq and jid), so a job admitted meanwhile
-- is not reported parked: then the list answers, or `not here`.
--
-- Listed (a plain queue): a binary search by jid. A plain queue is a FIFO list whose jobs were
-- pushed in jid order (a jid is a UUIDv7: it sorts by creation time), so the search lands on
-- the job; a job out of order (put back by recovery, promoted from the retry set, or from a
-- producer whose clock is behind) is found if it stands within WINDOW of where its jid sorts,
-- else the answer is an estimate. LINDEX walks the list's nodes (a few dozen jobs each) from
-- the nearer end: at most log2(n) + 1 of them, then an LRANGE of 2 * WINDOW + 1.
--
-- KEYS[1]  LIST  gator:{<queue>}:queue
-- KEYS[2]  STRING  gator:{<queue>}:job:<jid>
-- ARGV[1]  the jid
-- Returns  {0, ahead, exact, length}: in the list, the jobs before it, 1 if the job was found
--          there (else 0: `ahead` is where its jid sorts), and the list's length;
--          {1, ahead, length, critical, key, ready, waiting, paused, windows}: parked, the jobs
--          before it in its set, the set's length, 1 if it is the critical set (else its
--          parking key is `key`), the parking keys ready now, the ones holding parked jobs
--          (ready, blocked or timed), 1 if the queue is paused, 1 if it has time windows;
--          {2}: the queue is controlled and the job is not where its record says (admitted
--          just now, or parked by a version that did not record its place)
local WINDOW = 64
local target = ARGV[1]
local prefix = queue_prefix(KEYS[1])

local function jid_at(member)
  return string.match(member, '^%d+{"jid":"([^"\\]*)"') or ''
end

-- The rank of the member of seq `seq` and jid `target` among the `ties` members of `set`
-- from rank `from` (all of one score), or nil.
local function rank_among_ties(set, from, ties, seq)
  local want = seq .. target
  local lo, hi = from, from + ties - 1
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    local member = redis.call('ZRANGE', set, mid, mid)[1] or ''
    local key = string.sub(member, 1, 16) .. jid_at(member)
    if key == want then return mid end
    if key < want then lo = mid + 1 else hi = mid - 1 end
  end
end

local function parked(record)
  local seq, score, kind, pk = string.match(record, '^queued (%d+) (%d+) (%a+) ?(.*)$')
  if not seq then return nil end
  local set = qkey(prefix, 'critical')
  if kind == 'held' then set = qkey(prefix, 'held', pk) end
  local before = redis.call('ZCOUNT', set, '-inf', '(' .. score)
  local ties = redis.call('ZCOUNT', set, score, score)
  local rank = rank_among_ties(set, before, ties, string.format('%016d', tonumber(seq)))
  if not rank then return nil end
  local flow = redis.call('HMGET', qkey(prefix, 'flow'), 'paused', 'windows')
  local waiting = redis.call('ZCARD', qkey(prefix, 'ready'))
  return { 1, rank, redis.call('ZCARD', set), kind == 'critical' and 1 or 0, pk, waiting,
    waiting + redis.call('SCARD', qkey(prefix, 'blocked'))
      + redis.call('ZCARD', qkey(prefix, 'timed')),
    flow[1] == '1' and 1 or 0, flow[2] and 1 or 0 }
end

local record = redis.call('GET', KEYS[2])
if record and string.sub(record, 1, 7) == 'queued ' then
  local answer = parked(record)
  if answer then return answer end
end
if redis.call('TYPE', KEYS[1]).ok ~= 'list' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return {2} end
  return {0, 0, 0, 0}
end
local n = redis.call('LLEN', KEYS[1])
local function jid_of(payload)
  return string.match(payload, '^{"jid":"([^"\\]*)"') or ''
end
local lo, hi = 0, n - 1
while lo <= hi do
  local mid = math.floor((lo + hi) / 2)
  local jid = jid_of(redis.call('LINDEX', KEYS[1], mid) or '')
  if jid == target then return {0, mid, 1, n} end
  if jid < target then lo = mid + 1 else hi = mid - 1 end
end
local from = math.max(0, lo - WINDOW)
local near = redis.call('LRANGE', KEYS[1], from, lo + WINDOW)
for i, payload in ipairs(near) do
  if jid_of(payload) == target then return {0, from + i - 1, 1, n} end
end
return {0, lo, 0, n}
