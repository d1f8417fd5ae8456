#!lua
-- relay_push.lua: the outbox relay's push (gator::outbox): jobs a PostgreSQL transaction
-- committed, onto their queue, each once. A job's guard key is set in the same step as its
-- push and kept for an hour, far longer than a row stays locked by a relay that died (its
-- connection's end, or PostgreSQL's idle-in-transaction timeout, frees the row), so a row
-- relayed twice (the relay killed after this script, before its DELETE committed) finds its
-- guard and pushes nothing. Due now: to the tail of the list (parked on a controlled queue, as
-- enqueue.lua does); later: into the scheduled set, deciding on Redis time. All of one queue.
-- Not allow-oom: at maxmemory the push fails, and the rows wait in PostgreSQL.
--
-- KEYS[1]    LIST    gator:{<queue>}:queue
-- KEYS[2]    ZSET    gator:{<queue>}:scheduled
-- KEYS[2+i]  STRING  gator:{<queue>}:relayed:<jid of job i>
-- ARGV[1]    how long a guard is kept, ms
-- ARGV[2..]  for each job i, three: 'now', 'at' (a time, ms since the Unix epoch) or 'in' (a
--            delay, ms); the time or delay ('now': ignored); its payload
-- Returns    for each job, 1 if pushed, 0 if it had been relayed before
-- @flow_lib
local bad = wrong_queue(KEYS[1]) or wrong_type(KEYS[2], 'zset')
if bad then return bad end
local prefix = queue_prefix(KEYS[1])
local ttl = tonumber(ARGV[1])
local now = now_ms()
local pushed = {}
for i = 1, #KEYS - 2 do
  local mode, value, payload = ARGV[3 * i - 1], tonumber(ARGV[3 * i]), ARGV[3 * i + 1]
  if redis.call('SET', KEYS[2 + i], '1', 'NX', 'PX', ttl) then
    if has_flow_options(payload) then make_controlled(prefix) end
    local due = now
    if mode == 'at' then due = value elseif mode == 'in' then due = now + value end
    if due <= now then
      push_job(prefix, payload, false, now)
    else
      redis.call('ZADD', KEYS[2], due, payload)
      set_status(prefix, payload, 'scheduled ' .. due)
    end
    pushed[i] = 1
  else
    pushed[i] = 0
  end
end
return pushed
