#!lua flags=allow-oom
-- admit.lua: the fetch of a controlled queue (see flow_lib.lua). Settles the process's jobs
-- that succeeded, then decides on Redis time, in one atomic step, which parked jobs may start
-- now, and moves them into the process's in-flight list, taking their units under the
-- process's lease:
--
-- 1. a paused queue admits nothing, nor does one outside its time windows;
-- 2. parking keys whose rate limiter said "later" and whose time came are ready again;
-- 3. critical jobs first, outside the concurrency limit (rate limits still apply);
-- 4. then the parked jobs in score order across the ready parking keys (lowest first). A job
--    starts if
--    - the queue's units in use plus its cost fit the limit (else nothing more starts: the
--      total limit is first come, first served, so a costly job is not starved by cheap ones);
--    - its limit key's units plus its cost fit the key's share, or the key runs nothing yet,
--      or no other parking key waits, or the key was lent a unit (step 5); else the parking
--      key is *blocked* until one of its limit key's units is released;
--    - the queue's rate limiter and its own allow it now; else the queue waits (queue limiter)
--      or the parking key is *timed* until its limiter allows (named limiter);
--    - if it has a no-overlap key, no other job holds that key's lock (`overlap`); else the
--      parking key waits in `overlap_wait:<key>` until the holder settles
--      (release_overlap). A job that starts takes the lock, in this step.
--    A blocked, timed or waiting key leaves the ready set, so it never delays another key's
--    jobs.
-- 5. work-conserving shares: when no key is ready and units are free, they are lent to the
--    keys blocked at their shares: all at once to a key that waits alone, else one job at a
--    time to the waiting limit key with the least in use for its share ((units + 1) / share),
--    so idle shares go to the keys that wait in proportion to their shares. A lent unit comes
--    back when its job ends, to a key below its share first (a borrower is blocked again as
--    soon as another key is ready).
--
-- Batches. A worker sends the successes and the fetches of all its processors that reached
-- the queue while its previous call was in flight in one call (a group commit), so a call
-- settles and admits many jobs. Step 4 is done per batch: the best ready keys' first jobs are
-- merged in score order and decided one by one on local copies of the counters and rate
-- limiters, then each key's jobs taken are removed with one ZREMRANGEBYRANK, the units taken
-- with one HSET, and each limiter's TAT written once. The decisions are those of one job at a
-- time, in the same order.
--
-- A queue that is not controlled (its flow hash is gone) is served like fetch.lua. A plain list
-- moved aside when the queue became controlled (the backlog) is parked first, 1,000 jobs a
-- call, so jobs queued before the change keep their place; then any list found in place of
-- the queue's `controlled` marker.
-- allow-oom: it only moves jobs.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  ZSET  gator:{<queue>}:leases
-- KEYS[3]  HASH  gator:{<queue>}:flow
-- ARGV[1]  the process id
-- ARGV[2]  "max spare": the most jobs to admit (0 to only settle the successes), and up to how
--          many more where starting a job early changes no decision (see spare_allowed)
-- ARGV[3]  if the queue has time windows: "open close windows", the window interval (Unix ms)
--          holding or following the last Redis time the worker saw, and the `windows` value it
--          was computed from; empty otherwise
-- ARGV[4]  a shared limiter as limiter_take.lua found it: `name` (one start taken for this
--          call) or `name@ms` (closed for that long: the parking keys that need it wait, timed,
--          and the others go on); empty for none
-- ARGV[5]  how long (ms) a success's status record is kept (its result with it)
-- ARGV[6..] the process's jobs that succeeded, as pairs: the payload, and the tail of its
--          status record, `<attempts> <result JSON>` (the result empty for none), prefixed
--          `~` for a job stored aside (payload::aside: its side key is deleted with it); acked first (taken out of the in-flight list, their units
--          released, their status set to `done`), as flow_ack.lua does for one
-- Returns  { state, now, next, acked, job1, job2, ... }: state 0 (looked), 1 (paused), -1 (the
--          process holds no live lease: take one and admit again) or 2 (the queue has time
--          windows and ARGV[3] is missing, stale or for other windows: the 5th element is the
--          `windows` value; compute the interval for `now` and admit again); now is Redis time
--          (ms); acked has one character per ARGV[6..] success, '1' if it was in flight and is
--          now settled, '0' if not; or state 3 with nothing admitted: the next job names shared
--          limiter { ..., name, cost }: take a start of it (limiter_take.lua) and admit again
--          with ARGV[4];
--          next is when a job held back by a rate limiter may start (ms), 0 to call again at
--          once, or -1 (wait for a signal); then the jobs admitted, oldest first.
-- @flow_lib
-- A wrong-typed in-flight list fails the call before anything moved: the first LREM below
-- does that check when there are successes to settle.
if #ARGV < 6 then
  local bad = wrong_type(KEYS[1], 'list') if bad then return bad end
end
local prefix = queue_prefix(KEYS[3])
local now = now_ms()
local retention = tonumber(ARGV[5])

-- The successes, settled first (flow_ack.lua's step, batched): units are released before the
-- admission below, so a job that ends frees its units for the next one in the same call.
local acked, settled = {}, {}
for i = 6, #ARGV, 2 do
  local tail = ARGV[i + 1]
  -- `~`: a job stored aside (payload::aside), whose side key goes with it.
  local aside = string.byte(tail, 1) == 126
  if aside then tail = string.sub(tail, 2) end
  if redis.call('LREM', KEYS[1], 1, ARGV[i]) == 1 then
    acked[#acked + 1] = '1'
    settled[#settled + 1] = ARGV[i]
    set_status(prefix, ARGV[i], 'done ' .. now .. ' ' .. tail, retention)
    if aside then redis.call('DEL', qkey(prefix, 'payload', jid_of(ARGV[i]) or '')) end
  else
    acked[#acked + 1] = '0'
  end
end
acked = table.concat(acked)
free_units_many(prefix, ARGV[1], settled)

local max, spare = string.match(ARGV[2], '^(%d+) ?(%d*)$')
max, spare = tonumber(max), tonumber(spare) or 0
if max + spare < 1 then return { 0, now, -1, acked } end
local expiry = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not expiry or tonumber(expiry) <= now then
  return { -1, now, -1, acked }
end
local result = { 0, now, -1, acked }

local cfg = {}
local raw = redis.call('HGETALL', KEYS[3])
if #raw == 0 then
  -- Not controlled (its flow hash is gone): served like fetch.lua.
  local jobs = redis.call('LPOP', qkey(prefix, 'queue'), max)
  if jobs then
    redis.call('RPUSH', KEYS[1], unpack(jobs))
    for _, job in ipairs(jobs) do result[#result + 1] = job end
  end
  return result
end
for i = 1, #raw, 2 do cfg[raw[i]] = raw[i + 1] end
if cfg['paused'] == '1' then
  result[1] = 1
  return result
end

-- Time windows: the worker turns the queue's windows (in a time zone) into the interval that
-- holds or follows the last Redis time it saw; the decision is made here, on Redis time.
local windows = cfg['windows']
if windows then
  local open, close, spec = string.match(ARGV[3] or '', '^(-?%d+) (-?%d+) (.*)$')
  if spec ~= windows or now >= tonumber(close) then
    return { 2, now, -1, acked, windows }
  end
  if now < tonumber(open) then
    result[3] = tonumber(open)
    return result
  end
end

local backlog = qkey(prefix, 'backlog')
if redis.call('EXISTS', backlog) == 1 then
  for _, job in ipairs(redis.call('LPOP', backlog, 1000) or {}) do
    park(prefix, job, now, false, true)
  end
  if redis.call('EXISTS', backlog) == 1 then
    result[3] = 0
    return result
  end
end

-- A list in place of the marker (the marker deleted by hand, then jobs pushed): its jobs are
-- parked too, and the marker put back.
local plain = qkey(prefix, 'queue')
if redis.call('TYPE', plain)['ok'] == 'list' then
  for _, job in ipairs(redis.call('LPOP', plain, 1000) or {}) do
    park(prefix, job, now, false, true)
  end
  if redis.call('EXISTS', plain) == 1 then
    result[3] = 0
    return result
  end
  redis.call('SET', plain, 'controlled')
end

local ready, blocked, timed = qkey(prefix, 'ready'), qkey(prefix, 'blocked'), qkey(prefix, 'timed')
local locks = qkey(prefix, 'overlap')
for _, pk in ipairs(redis.call('ZRANGE', timed, '-inf', now, 'BYSCORE')) do
  redis.call('ZREM', timed, pk)
  ready_head(prefix, pk)
end

local function soonest(at)
  if result[3] < 0 or at < result[3] then result[3] = at end
end

local jobs = {}
-- Each rate limiter's state, read once and written back once (rate_state, rate_save).
local limiters = {}
local queue_limiter = rate_state(prefix, cfg['rate'], '', limiters)

-- A shared limiter (one the queue does not define) as the worker found it: a start taken for
-- this call (ARGV[4] = name), or closed for some ms (ARGV[4] = name@ms).
local shared_name, shared_closed = string.match(ARGV[4] or '', '^(.-)@(%d+)$')
if not shared_name and ARGV[4] and ARGV[4] ~= '' then shared_name = ARGV[4] end
local shared_taken = shared_name and not shared_closed
local needs_shared, needs_cost = nil, 1

-- The rate limiters a job of parking key `pk` and cost `cost` needs: 0 if it may start now
-- (and then takes its place in them), else when it may, and whether the whole queue waits.
-- A limiter the queue does not define is shared: its start is taken by the worker first
-- (limiter_take.lua); without one, `needs_shared` names it and the call ends.
local named_rates = {} -- parking key -> its limiter's name and the queue's spec for it
local function rate_allows(pk, cost)
  local wait = rate_wait(queue_limiter, now)
  if wait > 0 then return wait, true end
  local rates = named_rates[pk]
  if not rates then
    local name = rate_of(pk)
    rates = { name or false, name and cfg['rate:' .. name] or false }
    named_rates[pk] = rates
  end
  local name, local_spec = rates[1], rates[2]
  local named = false
  if local_spec then
    named = rate_state(prefix, local_spec, name, limiters)
    wait = rate_wait(named, now)
    if wait > 0 then return wait, false end
  elseif name then
    if name == shared_name and shared_closed then
      return now + tonumber(shared_closed), false
    elseif name == shared_name and shared_taken then
      shared_taken = false -- one start per call
    else
      needs_shared, needs_cost = name, cost
      return -1, false
    end
  end
  rate_take(queue_limiter, cost, now)
  rate_take(named, cost, now)
  return 0, false
end

local critical = qkey(prefix, 'critical')
while #jobs < max do
  local head = redis.call('ZRANGE', critical, 0, 0)
  if #head == 0 then break end
  local job = string.sub(head[1], 17)
  local flow = flow_options(job)
  local wait = rate_allows(parking_key(flow), job_cost(flow))
  if wait < 0 then break end
  if wait > 0 then
    soonest(wait)
    break
  end
  redis.call('ZREM', critical, head[1])
  jobs[#jobs + 1] = job
end

local limit = tonumber(cfg['limit'])
local used = qkey(prefix, 'used')
local total = 0
if limit then total = tonumber(redis.call('HGET', used, '!total')) or 0 end
-- Units in use per limit key, read once and counted on here; the units this call takes (job,
-- limit key and cost of each, in three lists).
local used_by_key, units_job, units_key, units_cost = {}, {}, {}, {}
local function used_of(lk)
  local n = used_by_key[lk]
  if n == nil then
    n = tonumber(redis.call('HGET', used, 'k:' .. lk)) or 0
    used_by_key[lk] = n
  end
  return n
end

local function share_of(lk)
  return tonumber(cfg['share:' .. lk]) or tonumber(cfg['share_default']) or 100
end

local function share_cap(lk)
  return math.max(1, math.floor(limit * share_of(lk) / 100))
end

-- The limit key lent one job over its share (step 5), until that job starts.
local lent_to = nil

local function others_wait()
  return redis.call('ZCARD', ready) > 1 or redis.call('SCARD', blocked) > 0
    or redis.call('ZCARD', timed) > 0
end

-- Spares: jobs a worker takes ahead of its processors (ARGV[2]), only where starting one early
-- changes no decision: no time windows; no rate limiter whose interval times the spares asked
-- for exceeds SPARE_MS (so the starts a buffer may bunch are within a millisecond's allowance);
-- under a concurrency limit, at most half the limit and half the key's share in use with it.
local SPARE_MS = 1
local cap = max + spare
local function spare_allowed(pk, cost, lk)
  if cfg['windows'] then return false end
  if queue_limiter and queue_limiter.t * spare > SPARE_MS then return false end
  local name = rate_of(pk)
  if name then
    local spec = cfg['rate:' .. name]
    if not spec then return false end -- a shared limiter: one start per call
    local named = rate_state(prefix, spec, name, limiters)
    if named and named.t * spare > SPARE_MS then return false end
  end
  if limit then
    if (total + cost) * 2 > limit then return false end
    if (used_of(lk) + cost) * 2 > share_cap(lk) then return false end
  end
  return true
end

-- One pass of step 4, over the best `want` ready keys (the best `want` jobs of the queue are
-- among their first `want` jobs): a k-way merge of their parked jobs in score order (ties in
-- parking order), each key's jobs read in chunks as the merge reaches them. Each job is
-- decided in turn; a key stops at its first job that may not start. The pass ends before a
-- job that scores above the best key it did not read (the next pass reads that one). Then
-- each key's jobs taken are removed at once, and the key re-indexed. Returns whether anything
-- changed (a job taken, a key blocked, timed or found empty), and whether the queue must stop
-- (full, its own limiter closed, or a shared limiter to ask). No table per job, and scores
-- only when the merge needs them: both cost more than the Redis calls here.
local function admit_pass()
  local want = cap - #jobs
  local top = redis.call('ZRANGE', ready, 0, want, 'WITHSCORES')
  local count = math.min(#top / 2, want)
  if count == 0 then return false, false end
  local bound = tonumber(top[2 * want + 2]) -- the best key left out, if any
  local scored = count > 1 or bound ~= nil
  local chunk = math.ceil(want / count)
  -- per key i: its name, the chunk read (flat, with scores if `scored`), the cursor into it,
  -- where the chunk starts in the key's set, whether more may follow, and jobs taken
  local pk, read, cur, offset, more, taken, stopped = {}, {}, {}, {}, {}, {}, {}
  local lks = {} -- each key's limit key
  local oks = {} -- each key's overlap key, or false
  local width = scored and 2 or 1
  local function fetch(i)
    local key = qkey(prefix, 'held', pk[i])
    if scored then
      read[i] = redis.call('ZRANGE', key, offset[i], offset[i] + chunk - 1, 'WITHSCORES')
    else
      read[i] = redis.call('ZRANGE', key, offset[i], offset[i] + chunk - 1)
    end
    cur[i] = 1
    more[i] = #read[i] == chunk * width
  end
  local changed = false
  for i = 1, count do
    pk[i], offset[i], taken[i] = top[2 * i - 1], 0, 0
    lks[i] = limit_key_of(pk[i])
    oks[i] = overlap_of(pk[i]) or false
    fetch(i)
    if #read[i] == 0 then
      redis.call('ZREM', ready, pk[i])
      stopped[i], changed = true, true
    end
  end
  -- whether key i's current job goes before key j's
  local function before(i, j)
    local si, sj = tonumber(read[i][cur[i] + 1]), tonumber(read[j][cur[j] + 1])
    if si ~= sj then return si < sj end
    return read[i][cur[i]] < read[j][cur[j]]
  end
  local halt = false
  while #jobs < cap do
    local best
    for i = 1, count do
      if not stopped[i] and cur[i] <= #read[i] and (not best or before(i, best)) then
        best = i
      end
    end
    if not best then break end
    if bound and tonumber(read[best][cur[best] + 1]) > bound then
      -- A key read scores above its index (it lost its head some other way): index it
      -- afresh, so the next pass orders it right.
      for i = 1, count do
        if taken[i] == 0 and not stopped[i] and tonumber(read[i][2]) ~= tonumber(top[2 * i]) then
          redis.call('ZADD', ready, read[i][2], pk[i])
          changed = true
        end
      end
      break
    end
    local member = read[best][cur[best]]
    local job = string.sub(member, 17)
    local cost = payload_cost(job)
    local key, lk = pk[best], lks[best]
    if #jobs >= max and not spare_allowed(key, cost, lk) then
      -- No spare here: the jobs asked for are taken, and taking this one early could change
      -- a decision.
      cap = #jobs
      break
    end
    local verdict = 'run'
    local okey = oks[best]
    if okey and redis.call('HEXISTS', locks, okey) == 1 then
      verdict = 'overlap'
    elseif limit then
      local used_k = used_of(lk)
      if total > 0 and total + cost > limit then
        verdict = 'full'
      elseif used_k > 0 and used_k + cost > share_cap(lk) and lk ~= lent_to and others_wait() then
        verdict = 'blocked'
      end
    end
    local wait, whole_queue = 0, false
    if verdict == 'run' then
      wait, whole_queue = rate_allows(key, cost)
    end
    changed = true
    if verdict == 'full' or wait < 0 or (wait > 0 and whole_queue) then
      if wait > 0 then soonest(wait) end
      halt = true
      break
    elseif verdict == 'blocked' then
      stopped[best] = true
      redis.call('ZREM', ready, key)
      redis.call('SADD', blocked, key)
    elseif verdict == 'overlap' then
      stopped[best] = true
      redis.call('ZREM', ready, key)
      redis.call('SADD', qkey(prefix, 'overlap_wait', okey), key)
    elseif wait > 0 then
      soonest(wait)
      stopped[best] = true
      redis.call('ZREM', ready, key)
      redis.call('ZADD', timed, wait, key)
    else
      if lk == lent_to then lent_to = nil end
      taken[best] = taken[best] + 1
      -- Units are only counted under a limit (a queue given one later counts the jobs it
      -- starts from then on).
      if limit then
        units_job[#units_job + 1], units_key[#units_job + 1] = job, lk
        units_cost[#units_job] = cost
        used_by_key[lk] = used_of(lk) + cost
      end
      total = total + cost
      if okey then redis.call('HSET', locks, okey, jid_of(job) or '') end
      jobs[#jobs + 1] = job
      cur[best] = cur[best] + width
      if cur[best] > #read[best] and more[best] then
        offset[best] = offset[best] + chunk
        fetch(best)
      end
    end
  end
  for i = 1, count do
    if taken[i] > 0 then
      redis.call('ZREMRANGEBYRANK', qkey(prefix, 'held', pk[i]), 0, taken[i] - 1)
      if not stopped[i] then
        if scored and cur[i] <= #read[i] then
          redis.call('ZADD', qkey(prefix, 'ready'), read[i][cur[i] + 1], pk[i])
        else
          ready_head(prefix, pk[i])
        end
      end
    end
  end
  return changed, halt
end

-- Step 5, once no key is ready: lends free units to the keys blocked at their shares; false
-- if there is none to lend, or no key to lend to.
local function lend()
  if not limit then return false end
  local waiting = redis.call('SMEMBERS', blocked)
  if #waiting == 1 and redis.call('ZCARD', timed) == 0 then
    -- Alone: nobody to share with, so its jobs may take every free unit at once.
    redis.call('SREM', blocked, waiting[1])
    ready_head(prefix, waiting[1])
    return true
  end
  if #waiting == 0 or total >= limit or #jobs >= max then return false end
  local best, least
  for _, pk in ipairs(waiting) do
    local lk = limit_key_of(pk)
    local load = (used_of(lk) + 1) / math.max(share_of(lk), 1)
    if not least or load < least then best, least = lk, load end
  end
  lent_to = best
  unblock(prefix, best)
  return true
end

while #jobs < cap do
  local changed, halt = admit_pass()
  if halt or (not changed and not lend()) then break end
end

take_units_many(prefix, ARGV[1], units_job, units_key, units_cost)
rate_save(prefix, limiters, now)

if #jobs == 0 then
  local next_timed = redis.call('ZRANGE', timed, 0, 0, 'WITHSCORES')
  if #next_timed > 0 then soonest(tonumber(next_timed[2])) end
end

if #jobs > 0 then
  redis.call('RPUSH', KEYS[1], unpack(jobs))
  for _, job in ipairs(jobs) do result[#result + 1] = job end
  -- A job that needs a shared limiter waits behind these: look again at once.
  if needs_shared then result[3] = 0 end
elseif needs_shared then
  return { 3, now, -1, acked, needs_shared, needs_cost }
end
return result
