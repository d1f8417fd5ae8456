-- flow_lib.lua: flow control (priority, pause, limits, rate limits), loaded after prelude.lua
-- into every script, because every script that puts a job on a queue must decide where it goes.
-- `store::flow` describes the model; docs/wire-format.md lists the keys.
--
-- A queue is *controlled* once its `flow` hash exists. Then its list key holds the STRING
-- marker `controlled` instead of a list: every job is *parked* in a sorted set per parking key
-- (limit key and rate limiter), and only admit.lua takes jobs from there. A bare RPUSH of a
-- producer, and the plain fetch paths of a worker (the MULTI of ack-and-take, BLMOVE) fail with
-- WRONGTYPE, and fetch.lua answers -2, so one that has not yet learnt that a queue is
-- controlled cannot run a job past a pause or a limit. A plain queue pays one EXISTS per
-- script that pushes, and nothing on a bare RPUSH.
--
-- Every key is built from the queue's prefix `<ns>:{<queue>}:`, taken from a key the script
-- was given: the same hash tag, so the same slot.
--
-- is_controlled(prefix)             whether the queue is controlled
-- make_controlled(prefix)           marks it controlled; moves its plain list aside (backlog)
-- push_job(prefix, job, first, now) puts a job on its queue: parked if controlled, else on
--                                   the list (at the head with `first`)
-- park(prefix, job, now, first)     parks a job by its priority and parking key, and writes its
--                                   status record: `queued` and where (note_place)
-- free_units(inflight_key, job)     releases what a settled job held
-- free_all_units(prefix, process)   releases what a process held (recovery, shutdown)
-- release_overlap(prefix, job)      releases a settled job's no-overlap lock, waking its waiters
-- take_units_many(...)              takes units for the jobs admit.lua starts
-- free_units_many(...)              free_units for a batch of settled jobs (admit.lua)
-- ready_head(...), signal(prefix): see each function
-- rate_state, rate_wait, rate_take, rate_save   GCRA rate limiters on Redis time

-- The origin of time-based scores (2025-01-01): keeps them within a double's exact integers.
local FLOW_T0 = 1735689600000
-- Parking key = limit key, then RATE_SEP .. rate limiter name if the job names one, then
-- OVERLAP_SEP .. overlap key if it has one: jobs waiting for an overlap key's lock wait under
-- their own parking key, in no other job's way.
local RATE_SEP = '\31'
local OVERLAP_SEP = '\30'

local function is_controlled(prefix)
  return redis.call('EXISTS', qkey(prefix, 'flow')) == 1
end

-- The payload's `flow` object ({} if none, or if the payload is not JSON: such a job is parked
-- with the defaults, and fails when it runs, as it would on a plain queue).
local function flow_options(job)
  local at = string.find(job, '"flow"', 1, true)
  if at then
    -- The flow object alone (it holds no nested object), else the whole payload: a key with
    -- a brace in it, or a `"flow"` that is not the field. (A plain find and a match anchored
    -- where it ends: an unanchored pattern costs four times as much, once per job admitted.)
    local object = string.match(job, '^:(%b{})', at + 6)
    if object then
      local ok, flow = pcall(cjson.decode, object)
      if ok and type(flow) == 'table' then return flow end
    end
    local ok, doc = pcall(cjson.decode, job)
    if ok and type(doc) == 'table' and type(doc['flow']) == 'table' then
      return doc['flow']
    end
  end
  return {}
end

local function has_flow_options(job)
  return next(flow_options(job)) ~= nil
end

local function clamp(value, low, high, default)
  local n = tonumber(value)
  if not n or n ~= n then return default end
  return math.max(low, math.min(high, math.floor(n)))
end

local function job_priority(flow) return clamp(flow['priority'], 0, 9999, 100) end
local function job_cost(flow) return clamp(flow['cost'], 1, 1000000, 1) end

-- The cost of a parked job's payload, decoding its flow object only if it names a cost (most
-- do not, and admit.lua asks once per job it starts).
local function payload_cost(job)
  if not string.find(job, '"cost"', 1, true) then return 1 end
  return job_cost(flow_options(job))
end

local function parking_key(flow)
  local key, rate, overlap = flow['key'], flow['rate'], flow['overlap']
  if type(key) ~= 'string' then key = '' end
  if type(rate) == 'string' and rate ~= '' then key = key .. RATE_SEP .. rate end
  if type(overlap) == 'string' and overlap ~= '' then key = key .. OVERLAP_SEP .. overlap end
  return key
end

local function limit_key_of(pk)
  return (string.match(pk, '^([^\30\31]*)'))
end

local function rate_of(pk)
  return string.match(pk, '\31([^\30]*)')
end

-- The overlap key of parking key `pk`, or nil.
local function overlap_of(pk)
  return string.match(pk, '\30(.*)$')
end

-- Whether parking key `pk` waits for its overlap key's lock (then it is in no ready set).
local function overlap_waits(prefix, pk)
  local okey = overlap_of(pk)
  return okey ~= nil
    and redis.call('SISMEMBER', qkey(prefix, 'overlap_wait', okey), pk) == 1
end

-- Wakes workers waiting on the queue (BLPOP of the signal list): a job was parked, units were
-- released, the queue was resumed. At most 16 tokens wait; a worker woken for nothing admits
-- nothing and waits again.
local function signal(prefix)
  local key = qkey(prefix, 'signal')
  redis.call('LPUSH', key, '1')
  redis.call('LTRIM', key, 0, 15)
end

-- The width of a priority's band of scores: a parked job's score is priority * BAND + its place
-- in the band (a sequence number, or a fair job's virtual finish tag).
local BAND = 274877906944 -- 2^38

-- Whether nothing is parked on the queue: no ready, blocked, timed or critical job.
local function drained(prefix)
  return redis.call('ZCARD', qkey(prefix, 'ready')) == 0
    and redis.call('SCARD', qkey(prefix, 'blocked')) == 0
    and redis.call('ZCARD', qkey(prefix, 'timed')) == 0
    and redis.call('ZCARD', qkey(prefix, 'critical')) == 0
end

-- Weighted fair queueing over fair keys: the virtual finish tag of a new job of fair key `key`,
-- `max(V, last tag of the key) + round(100 / weight)`, where V is just below the tag of the job
-- that starts next (the ready set's head), never going back. So jobs of one key are spaced by
-- their step, a key that had nothing waiting starts at V, and a new key's first job starts
-- after at most one job of each key of its weight that was waiting. A drained queue starts
-- again from 0, forgetting every key's last tag. No clock is read: time here is virtual.
local function fair_tag(prefix, key)
  local fair, flow = qkey(prefix, 'fair'), qkey(prefix, 'flow')
  local v = 0
  if drained(prefix) then
    redis.call('DEL', fair)
  else
    v = tonumber(redis.call('HGET', flow, 'fair_v')) or 0
    local head = redis.call('ZRANGE', qkey(prefix, 'ready'), 0, 0, 'WITHSCORES')
    if #head > 0 then v = math.max(v, tonumber(head[2]) % BAND - 1) end
    -- Keys whose last tag V has passed would get V anyway: forgotten, so the set holds only
    -- the keys with jobs ahead of V.
    redis.call('ZREMRANGEBYSCORE', fair, '-inf', v)
  end
  redis.call('HSET', flow, 'fair_v', v)
  local weights = redis.call('HMGET', flow, 'fair_weight:' .. key, 'fair_weight_default')
  local weight = clamp(weights[1] or weights[2], 1, 100, 1)
  local last = tonumber(redis.call('ZSCORE', fair, key)) or 0
  local tag = math.min(math.max(v, last) + math.floor(100 / weight + 0.5), BAND - 1)
  redis.call('ZADD', fair, tag, key)
  return tag
end

-- The score of a parked job; lower runs first. `first` (a job put back) goes before every job
-- of its priority. A fair job (`flow.fair`, a string) is placed by its fair key's tag
-- (fair_tag); the queue's `aging` and `order` do not apply to it. Exact in a double: priority <
-- 2^14, seq modulo 2^38 or 2^12, times < 2^40, tags < 2^38.
local function held_score(prefix, flow, now, seq, first)
  local priority = job_priority(flow)
  if type(flow['fair']) == 'string' then
    if first then return priority * BAND end
    return priority * BAND + fair_tag(prefix, flow['fair'])
  end
  local cfg = redis.call('HMGET', qkey(prefix, 'flow'), 'aging', 'order')
  local since = now - FLOW_T0
  if cfg[2] == 'due' then
    -- by the time the job became due, priority breaking ties
    return since * 16384 + priority
  end
  local aging = clamp(cfg[1], 0, 86400000, 0)
  if aging > 0 then
    -- effective priority = priority - waited / aging: ordered by priority * aging + since
    return (priority * aging + since) * 4096 + seq % 4096
  end
  return priority * BAND + seq % BAND
end

-- Re-indexes parking key `pk` in the ready set at its head job's score, or drops it if empty.
local function ready_head(prefix, pk)
  local head = redis.call('ZRANGE', qkey(prefix, 'held', pk), 0, 0, 'WITHSCORES')
  if #head == 0 then
    redis.call('ZREM', qkey(prefix, 'ready'), pk)
  else
    redis.call('ZADD', qkey(prefix, 'ready'), head[2], pk)
  end
end

-- Writes a parked job's status record: `queued`, then where it is parked, for position.lua
-- (`<seq> <score> critical` or `<seq> <score> held <parking key>`): a jid alone finds neither
-- its member nor its score. With `guarded` (jobs parked from a backlog, which a cancel may
-- have reached first), only over a `queued` record or none.
local function note_place(prefix, job, seq, score, where, guarded)
  if guarded then
    local jid = jid_of(job)
    if not jid then return end
    local record = redis.call('GET', qkey(prefix, 'job', jid))
    if record and string.sub(record, 1, 6) ~= 'queued' then return end
  end
  set_status(prefix, job, 'queued ' .. seq .. ' ' .. string.format('%.0f', score) .. ' ' .. where)
end

-- Parks a job and writes its status record (note_place; `guarded` as there).
local function park(prefix, job, now, first, guarded)
  local flow = flow_options(job)
  local seq = 0
  if not first then seq = redis.call('INCR', qkey(prefix, 'seq')) end
  local score = held_score(prefix, flow, now, seq, first)
  -- The seq prefix keeps equal scores in FIFO order; admit.lua strips it.
  local member = string.format('%016d', seq) .. job
  local set = qkey(prefix, 'critical')
  if flow['critical'] == true then
    redis.call('ZADD', set, score, member)
    note_place(prefix, job, seq, score, 'critical', guarded)
  else
    local pk = parking_key(flow)
    set = qkey(prefix, 'held', pk)
    note_place(prefix, job, seq, score, 'held ' .. pk, guarded)
    redis.call('ZADD', set, score, member)
    if redis.call('SISMEMBER', qkey(prefix, 'blocked'), pk) == 0
        and not redis.call('ZSCORE', qkey(prefix, 'timed'), pk)
        and not overlap_waits(prefix, pk) then
      redis.call('ZADD', qkey(prefix, 'ready'), 'LT', score, pk)
    end
  end
  signal(prefix)
  return seq, set, member, flow
end

-- The ticket of a job just parked (set, member and flow as park returned them): its sequence
-- number, how many jobs of its parking key go before it, and, on a rate-limited queue, when it
-- is expected to start: the limiter's next start plus one emission interval per job ahead
-- (exact for an evenly spaced queue whose jobs share one parking key; an estimate otherwise).
local function ticket(prefix, seq, set, member, flow, now)
  local ahead = redis.call('ZRANK', set, member) or 0
  local name = flow['rate']
  if type(name) ~= 'string' or name == '' then name = '' end
  local spec
  if name == '' then
    spec = redis.call('HGET', qkey(prefix, 'flow'), 'rate')
  else
    spec = redis.call('HGET', qkey(prefix, 'flow'), 'rate:' .. name)
  end
  local count, interval = string.match(spec or '', '^(%d+) (%d+) %d+$')
  if not count or tonumber(count) == 0 then return { seq, ahead, -1 } end
  local t = tonumber(interval) / tonumber(count)
  local tat = tonumber(redis.call('GET', qkey(prefix, 'tat', name))) or now
  return { seq, ahead, math.ceil(math.max(tat, now) + ahead * t) }
end

-- The queue's list is moved aside (the backlog, parked by admit.lua in order) and replaced by
-- the STRING marker `controlled`: a bare RPUSH, an LMOVE or a BLMOVE on it fails with
-- WRONGTYPE, so a producer or a worker that has not learnt that the queue is controlled cannot
-- put a job where the controls would not see it, or take one past them.
local function make_controlled(prefix)
  local queue, backlog = qkey(prefix, 'queue'), qkey(prefix, 'backlog')
  if redis.call('HSETNX', qkey(prefix, 'flow'), 'controlled', '1') == 1
      and redis.call('TYPE', queue)['ok'] == 'list' then
    if redis.call('EXISTS', backlog) == 0 then
      redis.call('RENAME', queue, backlog)
    else
      while redis.call('LMOVE', queue, backlog, 'LEFT', 'RIGHT') do end
    end
  end
  if redis.call('TYPE', queue)['ok'] ~= 'string' then
    redis.call('SET', queue, 'controlled')
  end
end

local function push_job(prefix, job, first, now)
  if is_controlled(prefix) then
    park(prefix, job, now or now_ms(), first)
    return
  end
  set_status(prefix, job, 'queued')
  if first then
    redis.call('LPUSH', qkey(prefix, 'queue'), job)
  else
    redis.call('RPUSH', qkey(prefix, 'queue'), job)
  end
end

-- Parking keys of limit key `lk` that waited for their share may be admissible again.
-- Parking keys of the limit keys in set `lks` (lk -> anything) that waited for their share may
-- be admissible again.
local function unblock_keys(prefix, lks)
  local blocked = qkey(prefix, 'blocked')
  for _, pk in ipairs(redis.call('SMEMBERS', blocked)) do
    if lks[limit_key_of(pk)] then
      redis.call('SREM', blocked, pk)
      ready_head(prefix, pk)
    end
  end
end

local function unblock(prefix, lk)
  unblock_keys(prefix, { [lk] = true })
end

-- Gives back `cost` units of limit key `lk` (the caller lets the key's blocked parking keys
-- try again).
local function return_units(prefix, lk, cost)
  local used = qkey(prefix, 'used')
  if redis.call('HINCRBY', used, '!total', -cost) <= 0 then redis.call('HDEL', used, '!total') end
  if redis.call('HINCRBY', used, 'k:' .. lk, -cost) <= 0 then redis.call('HDEL', used, 'k:' .. lk) end
end

local function release_units(prefix, lk, cost)
  return_units(prefix, lk, cost)
  unblock(prefix, lk)
  signal(prefix)
end

-- Units are leased: held in `units:<process>` (job -> "limit key\ncost\ncount"), the process's
-- lease on the queue being the lease, so recovery frees them with the jobs. `used` sums them.
-- admit.lua takes them for a batch of jobs (`jobs`, with each one's limit key in `keys` and
-- cost in `costs`): one HMGET and one HSET for all of them, one HINCRBY per limit key and one
-- for the total.
local function take_units_many(prefix, process, jobs, keys, costs)
  if #jobs == 0 then return end
  local units = qkey(prefix, 'units', process)
  local before = redis.call('HMGET', units, unpack(jobs))
  local counts, args, by_key, total = {}, {}, {}, 0
  for i, job in ipairs(jobs) do
    local lk, cost = keys[i], costs[i]
    -- one payload in flight twice (rare) is counted
    local count = counts[job]
    if not count then
      count = 0
      if before[i] then count = tonumber(string.match(before[i], '\n(%d+)$')) end
    end
    counts[job] = count + 1
    by_key[lk] = (by_key[lk] or 0) + cost
    total = total + cost
  end
  for i, job in ipairs(jobs) do
    if counts[job] then
      args[#args + 1] = job
      args[#args + 1] = keys[i] .. '\n' .. costs[i] .. '\n' .. counts[job]
      counts[job] = nil
    end
  end
  redis.call('HSET', units, unpack(args))
  redis.call('HINCRBY', qkey(prefix, 'used'), '!total', total)
  for lk, cost in pairs(by_key) do redis.call('HINCRBY', qkey(prefix, 'used'), 'k:' .. lk, cost) end
end

-- Releases the no-overlap lock job `job` holds, if it holds one (a settled job, or one put
-- back), and makes the parking keys that waited for it ready. A job without an overlap key
-- costs one plain find in its payload.
local function release_overlap(prefix, job)
  if not string.find(job, '"overlap"', 1, true) then return end
  local okey = flow_options(job)['overlap']
  if type(okey) ~= 'string' or okey == '' then return end
  local locks = qkey(prefix, 'overlap')
  -- Only its own lock: a job run again after recovery must not free its successor's.
  if redis.call('HGET', locks, okey) ~= (jid_of(job) or '') then return end
  redis.call('HDEL', locks, okey)
  local waiting = qkey(prefix, 'overlap_wait', okey)
  local pks = redis.call('SMEMBERS', waiting)
  if #pks > 0 then
    redis.call('DEL', waiting)
    for _, pk in ipairs(pks) do ready_head(prefix, pk) end
    signal(prefix)
  end
end

-- The batched free_units of admit.lua, for settled jobs `jobs` of process `process`: their
-- no-overlap locks, then, with one HMGET and one HDEL for all of them, their units (one
-- release per limit key, one signal). No units if the process holds none (a queue without a
-- limit).
local function free_units_many(prefix, process, jobs)
  if #jobs == 0 then return end
  for _, job in ipairs(jobs) do release_overlap(prefix, job) end
  local units = qkey(prefix, 'units', process)
  if redis.call('EXISTS', units) == 0 then return end
  local held = redis.call('HMGET', units, unpack(jobs))
  local left, by_key = {}, {}
  for i, job in ipairs(jobs) do
    local entry = left[job]
    if entry == nil then
      entry = false
      if held[i] then
        local lk, cost, count = string.match(held[i], '^(.*)\n(%d+)\n(%d+)$')
        entry = { lk = lk, cost = tonumber(cost), count = tonumber(count) }
      end
      left[job] = entry
    end
    if entry and entry.count > 0 then
      entry.count = entry.count - 1
      by_key[entry.lk] = (by_key[entry.lk] or 0) + entry.cost
    end
  end
  local gone = {}
  for job, entry in pairs(left) do
    if entry and entry.count == 0 then
      gone[#gone + 1] = job
    elseif entry then
      redis.call('HSET', units, job, entry.lk .. '\n' .. entry.cost .. '\n' .. entry.count)
    end
  end
  if #gone > 0 then redis.call('HDEL', units, unpack(gone)) end
  local released = false
  for lk, cost in pairs(by_key) do
    return_units(prefix, lk, cost)
    released = true
  end
  if released then
    unblock_keys(prefix, by_key)
    signal(prefix)
  end
end

-- What a settled job held, released: free_units_many for one job, its process and prefix read
-- from the in-flight list's key.
local function free_units(inflight_key, job)
  local prefix, process = string.match(inflight_key, '^(.-}:)inflight:(.*)$')
  if prefix then free_units_many(prefix, process, { job }) end
end

local function free_all_units(prefix, process)
  local units = qkey(prefix, 'units', process)
  local all = redis.call('HGETALL', units)
  for i = 2, #all, 2 do
    local lk, cost, count = string.match(all[i], '^(.*)\n(%d+)\n(%d+)$')
    release_units(prefix, lk, tonumber(cost) * tonumber(count))
  end
  redis.call('DEL', units)
end

-- Moves every job of an in-flight list back to its controlled queue, first in line.
local function park_all_first(prefix, inflight, now)
  local jobs = redis.call('LRANGE', inflight, 0, -1)
  for i = #jobs, 1, -1 do
    release_overlap(prefix, jobs[i])
    park(prefix, jobs[i], now, true)
  end
  redis.call('DEL', inflight)
  return #jobs
end

-- GCRA on Redis time. A limiter with `spec` "count interval_ms burst": a job of cost c may start
-- when the limiter's theoretical arrival time (TAT) is at most `burst - 1` emission intervals
-- ahead of now, and moves the TAT c intervals on (from the TAT itself if it is less than one
-- interval behind now, else from now). So at most `burst + 1 + count * w / interval` jobs start
-- in any window of w ms: no burst at a window edge, and with burst 1 starts are spaced evenly.
--
-- One admit call reads each limiter's TAT once (rate_state, kept in `states` by name, '' for
-- the queue's own), decides every start on that copy (rate_wait, rate_take), and writes it back
-- once (rate_save): a batch of starts costs two commands per limiter, not two per job.

-- The state of limiter `name` with `spec`, read once per call; false if it has no rate.
local function rate_state(prefix, spec, name, states)
  local state = states[name]
  if state == nil then
    local count, interval, burst = string.match(spec or '', '^(%d+) (%d+) (%d+)$')
    if not count or tonumber(count) == 0 then
      state = false
    else
      state = {
        t = tonumber(interval) / tonumber(count),
        burst = tonumber(burst),
        tat = tonumber(redis.call('GET', qkey(prefix, 'tat', name))),
        taken = false,
      }
    end
    states[name] = state
  end
  return state
end

-- 0 if limiter `state` lets a job start at `now`, else the time (ms) it may.
local function rate_wait(state, now)
  if not state then return 0 end
  local at = math.max(state.tat or now, now) - (state.burst - 1) * state.t
  if at > now then return math.ceil(at) end
  return 0
end

-- Takes a start of cost `cost` of limiter `state` at `now`.
local function rate_take(state, cost, now)
  if not state then return end
  -- A start less than one interval late keeps the schedule (the TAT is not moved up to now):
  -- workers wake a millisecond or two after each slot, and losing that every time would run
  -- the limiter below its rate. A limiter idle for longer starts afresh from now.
  local tat = state.tat or now
  if tat < now - state.t then tat = now end
  state.tat = tat + state.t * cost
  state.taken = true
end

-- Writes back the TAT of every limiter a start was taken of (kept until it no longer matters:
-- a TAT in the past is the same as none).
local function rate_save(prefix, states, now)
  for name, state in pairs(states) do
    if state and state.taken then
      redis.call('SET', qkey(prefix, 'tat', name), string.format('%.3f', state.tat),
        'PX', math.ceil(state.tat - now) + 1000)
    end
  end
end
