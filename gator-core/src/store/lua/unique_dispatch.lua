#!lua
-- unique_dispatch.lua: dispatch a job that carries a `unique` field (see unique_lib.lua), in
-- one step with its lock, so two producers racing with the same key make one job.
--
-- Without `debounce`: if the lock is held, nothing is stored and the holder's jid is returned,
-- flagged a duplicate. Otherwise the lock is taken (SET PX ttl, on Redis's clock, holding the
-- jid) and the job is enqueued as schedule.lua does: due now, on its queue (parked if the queue
-- is controlled); later, in its scheduled set.
--
-- With `debounce` (ms): the job is due `debounce` from now on Redis's clock (or at the time
-- asked for, if later). If the lock names a job still pending in the scheduled set, that job is
-- replaced by this payload under the pending job's jid (its args are the latest ones) and its
-- due time moves to the new one: BullMQ's debounce mode with extend and replace. Otherwise
-- (none pending, or it already left the scheduled set to run) this is a new job, and the lock
-- now names it. The lock then lives ttl + debounce ms, and holds the pending payload.
--
-- KEYS[1]  LIST  gator:{<queue>}:queue
-- KEYS[2]  ZSET  gator:{<queue>}:scheduled
-- ARGV[1]  'now', 'at' (ARGV[2] is a time, ms since the Unix epoch) or 'in' (a delay, ms)
-- ARGV[2]  the time or the delay ('now': ignored)
-- KEYS[3]  STRING  gator:{<queue>}:relayed:<jid>, only from the outbox relay (relay_push.lua):
--          set with the dispatch, so a row relayed twice stores nothing the second time
-- ARGV[3]  the payload, with its `unique` field (written by Gator: it starts with its jid)
-- ARGV[4]  with KEYS[3]: how long the guard is kept, ms
-- Returns  { jid, 1 if a duplicate (an existing job's jid) else 0 (2: relayed before, nothing
--          stored), due time (ms) or 0 if the job is on its queue }
-- @flow_lib
-- @unique_lib
local bad = wrong_queue(KEYS[1]) or wrong_type(KEYS[2], 'zset')
if bad then return bad end
local unique, jid = unique_of(ARGV[3])
if not unique then
  return redis.error_reply('ERR unique_dispatch.lua: the payload has no readable unique field')
end
if KEYS[3] and not redis.call('SET', KEYS[3], '1', 'NX', 'PX', tonumber(ARGV[4])) then
  return { jid, 2, 0 }
end
local prefix = queue_prefix(KEYS[1])
local lock = unique_lock(prefix, unique['key'])
local ttl = tonumber(unique['ttl'])
if not ttl or ttl <= 0 then
  return redis.error_reply('ERR unique_dispatch.lua: unique.ttl must be a positive number of ms')
end
local now = now_ms()
local due = now
if ARGV[1] == 'at' then
  due = tonumber(ARGV[2])
elseif ARGV[1] == 'in' then
  due = now + tonumber(ARGV[2])
end
local debounce = tonumber(unique['debounce'])
local held = redis.call('GET', lock)

if debounce then
  due = math.max(due, now + debounce)
  local payload = ARGV[3]
  local duplicate = 0
  if held and string.sub(held, 1, 1) == '{' and redis.call('ZSCORE', KEYS[2], held) then
    -- Still pending: this payload takes its place under its jid.
    local pending = lock_holder(held)
    local head = '{"jid":"' .. jid .. '"'
    if pending and string.sub(payload, 1, #head) == head then
      payload = '{"jid":"' .. pending .. '"' .. string.sub(payload, #head + 1)
    else
      local doc = cjson.decode(payload)
      doc['jid'] = pending
      payload = cjson.encode(doc)
    end
    redis.call('ZREM', KEYS[2], held)
    jid, duplicate = pending, 1
  end
  if has_flow_options(payload) then make_controlled(prefix) end
  redis.call('ZADD', KEYS[2], due, payload)
  redis.call('SET', lock, payload, 'PX', ttl + debounce)
  set_status(prefix, payload, 'scheduled ' .. due)
  return { jid, duplicate, due }
end

if held then
  return { lock_holder(held) or held, 1, 0 }
end
redis.call('SET', lock, jid, 'PX', ttl)
if has_flow_options(ARGV[3]) then make_controlled(prefix) end
if due <= now then
  push_job(prefix, ARGV[3], false, now)
  return { jid, 0, 0 }
end
redis.call('ZADD', KEYS[2], due, ARGV[3])
set_status(prefix, ARGV[3], 'scheduled ' .. due)
return { jid, 0, due }
