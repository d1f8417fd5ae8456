#!lua flags=allow-oom
-- admit.lua: the fetch of a controlled queue (see flow_lib.lua). Decides on Redis time, in one
-- atomic step, which parked jobs may start now, and moves them into the process's in-flight
-- list, taking their units under the process's lease:
--
-- 1. a paused queue admits nothing, nor does one outside its time windows;
-- 2. parking keys whose rate limiter said "later" and whose time came are ready again;
-- 3. critical jobs first, outside the concurrency limit (rate limits still apply);
-- 4. then the ready parking key whose head job has the lowest score. Its head job starts if
--    - the queue's units in use plus its cost fit the limit (else nothing more starts: the
--      total limit is first come, first served, so a costly job is not starved by cheap ones);
--    - its limit key's units plus its cost fit the key's share, or the key runs nothing yet,
--      or no other parking key waits (work-conserving: an idle share may be borrowed); else
--      the parking key is *blocked* until one of its limit key's units is released;
--    - the queue's rate limiter and its own allow it now; else the queue waits (queue limiter)
--      or the parking key is *timed* until its limiter allows (named limiter).
--    A blocked or timed key leaves the ready set, so it never delays another key's jobs.
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
-- ARGV[2]  the most jobs to admit
-- ARGV[3]  if the queue has time windows: "open close windows", the window interval (Unix ms)
--          holding or following the last Redis time the worker saw, and the `windows` value it
--          was computed from; empty or absent otherwise
-- ARGV[4]  the payload of the process's job that just succeeded, acked first (taken out of
--          the in-flight list, its units released), as flow_ack.lua does; empty for none
-- ARGV[5]  optional: a shared limiter as limiter_take.lua found it: `name` (one start taken
--          for this call) or `name@ms` (closed for that long: the parking keys that need it
--          wait, timed, and the others go on)
-- Returns  { state, now, next, acked, job1, job2, ... }: state 0 (looked), 1 (paused), -1 (the
--          process holds no live lease: take one and admit again) or 2 (the queue has time
--          windows and ARGV[3] is missing, stale or for other windows: the 4th element is the
--          `windows` value, after acked; compute the interval for `now` and admit again); now
--          is Redis time (ms); acked is 1 if ARGV[4] was in flight and is now settled; or
--          state 3 with nothing admitted: the next job names shared limiter { ..., name, cost }:
--          take a start of it (limiter_take.lua) and admit again with ARGV[5];
--          next is when a job held back by a rate limiter may start (ms), 0 to call again at
--          once, or -1 (wait for a signal); then the jobs admitted, oldest first.
-- @flow_lib
local bad = wrong_type(KEYS[1], 'list') if bad then return bad end
local prefix = queue_prefix(KEYS[3])
local now = now_ms()
-- The success of the process's last job, settled first (flow_ack.lua's step): one call per job.
local acked = 0
if ARGV[4] and ARGV[4] ~= '' then
  if redis.call('LREM', KEYS[1], 1, ARGV[4]) == 1 then
    free_units(KEYS[1], ARGV[4])
    acked = 1
  end
end
local expiry = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not expiry or tonumber(expiry) <= now then
  return { -1, now, -1, acked }
end
local max = tonumber(ARGV[2])
local result = { 0, now, -1, acked }

local cfg = {}
local raw = redis.call('HGETALL', KEYS[3])
if #raw == 0 then
  -- Not controlled (its flow hash is gone): served like fetch.lua.
  local jobs = redis.call('LPOP', prefix .. 'queue', max)
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

local backlog = prefix .. 'backlog'
if redis.call('EXISTS', backlog) == 1 then
  for _, job in ipairs(redis.call('LPOP', backlog, 1000) or {}) do
    park(prefix, job, now, false)
  end
  if redis.call('EXISTS', backlog) == 1 then
    result[3] = 0
    return result
  end
end

-- A list in place of the marker (the marker deleted by hand, then jobs pushed): its jobs are
-- parked too, and the marker put back.
local plain = prefix .. 'queue'
if redis.call('TYPE', plain)['ok'] == 'list' then
  for _, job in ipairs(redis.call('LPOP', plain, 1000) or {}) do
    park(prefix, job, now, false)
  end
  if redis.call('EXISTS', plain) == 1 then
    result[3] = 0
    return result
  end
  redis.call('SET', plain, 'controlled')
end

local ready, blocked, timed = prefix .. 'ready', prefix .. 'blocked', prefix .. 'timed'
for _, pk in ipairs(redis.call('ZRANGE', timed, '-inf', now, 'BYSCORE')) do
  redis.call('ZREM', timed, pk)
  ready_head(prefix, pk)
end

local function soonest(at)
  if result[3] < 0 or at < result[3] then result[3] = at end
end

local jobs = {}
local queue_rate = cfg['rate']

-- A shared limiter (one the queue does not define) as the worker found it: a start taken for
-- this call (ARGV[5] = name), or closed for some ms (ARGV[5] = name@ms).
local shared_name, shared_closed = string.match(ARGV[5] or '', '^(.-)@(%d+)$')
if not shared_name and ARGV[5] and ARGV[5] ~= '' then shared_name = ARGV[5] end
local shared_taken = shared_name and not shared_closed
local needs_shared, needs_cost = nil, 1

-- The rate limiters a job of parking key `pk` and cost `cost` needs: 0 if it may start now
-- (and then takes its place in them), else when it may, and whether the whole queue waits.
-- A limiter the queue does not define is shared: its start is taken by the worker first
-- (limiter_take.lua); without one, `needs_shared` names it and the call ends.
local function rate_allows(pk, cost)
  local name = rate_of(pk)
  local wait, queue_tat = rate_wait(prefix, queue_rate, '', now)
  if wait > 0 then return wait, true end
  local local_spec = name and cfg['rate:' .. name]
  local name_tat
  if local_spec then
    wait, name_tat = rate_wait(prefix, local_spec, name, now)
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
  rate_take(prefix, queue_rate, '', cost, now, queue_tat)
  if local_spec then rate_take(prefix, local_spec, name, cost, now, name_tat) end
  return 0, false
end

local critical = prefix .. 'critical'
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
local used = prefix .. 'used'
local total = 0
if limit then total = tonumber(redis.call('HGET', used, '!total')) or 0 end

local function share_cap(lk)
  local pct = tonumber(cfg['share:' .. lk]) or tonumber(cfg['share_default']) or 100
  return math.max(1, math.floor(limit * pct / 100))
end

local function others_wait()
  return redis.call('ZCARD', ready) > 1 or redis.call('SCARD', blocked) > 0
    or redis.call('ZCARD', timed) > 0
end

while #jobs < max do
  local top = redis.call('ZRANGE', ready, 0, 0)
  if #top == 0 and limit and redis.call('SCARD', blocked) == 1
      and redis.call('ZCARD', timed) == 0 then
    -- The only key that waits may borrow the idle shares.
    local pk = redis.call('SPOP', blocked)
    ready_head(prefix, pk)
    top = redis.call('ZRANGE', ready, 0, 0)
  end
  if #top == 0 then break end
  local pk = top[1]
  local held = prefix .. 'held:' .. pk
  local head = redis.call('ZRANGE', held, 0, 0)
  if #head == 0 then
    redis.call('ZREM', ready, pk)
  else
    local job = string.sub(head[1], 17)
    local flow = flow_options(job)
    local cost = job_cost(flow)
    local lk = limit_key_of(pk)
    local verdict = 'run'
    if limit then
      local used_k = tonumber(redis.call('HGET', used, 'k:' .. lk)) or 0
      if total > 0 and total + cost > limit then
        verdict = 'full'
      elseif used_k > 0 and used_k + cost > share_cap(lk) and others_wait() then
        verdict = 'blocked'
      end
    end
    local wait, whole_queue = 0, false
    if verdict == 'run' then
      wait, whole_queue = rate_allows(pk, cost)
    end
    if verdict == 'full' or wait < 0 then
      break
    elseif verdict == 'blocked' then
      redis.call('ZREM', ready, pk)
      redis.call('SADD', blocked, pk)
    elseif wait > 0 then
      soonest(wait)
      if whole_queue then break end
      redis.call('ZREM', ready, pk)
      redis.call('ZADD', timed, wait, pk)
    else
      redis.call('ZREM', held, head[1])
      ready_head(prefix, pk)
      -- Units are only counted under a limit (a queue given one later counts the jobs it
      -- starts from then on).
      if limit then take_units(prefix, ARGV[1], job, lk, cost) end
      total = total + cost
      jobs[#jobs + 1] = job
    end
  end
end

if #jobs == 0 then
  local next_timed = redis.call('ZRANGE', timed, 0, 0, 'WITHSCORES')
  if #next_timed > 0 then soonest(tonumber(next_timed[2])) end
end

if #jobs > 0 then
  redis.call('RPUSH', KEYS[1], unpack(jobs))
  for _, job in ipairs(jobs) do result[#result + 1] = job end
elseif needs_shared then
  return { 3, now, -1, acked, needs_shared, needs_cost }
end
return result
