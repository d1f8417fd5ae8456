#!lua flags=allow-oom
-- kill.lua: record that a job will not run again: take it out of its process's in-flight
-- list, add it to its queue's dead set, and trim the set by age and size, in one atomic step,
-- so the cap holds however many workers kill jobs at once. Nothing is written if the job was
-- no longer in flight (recovered as an orphan and queued again). Redis time scores the entry
-- and decides its age, so a worker whose clock runs ahead cannot trim the set empty.
--
-- A workflow step's death is also recorded in the queue's outbox, for its workflow (see
-- wf_report.lua), in the same step.
-- Trimmed entries that are chain steps with a step after them are returned, so the caller
-- deletes their chains' waiting lists (which may live under another queue's hash tag).
-- A unique job's lock (unique_lib.lua) is released in the same step: a dead job holds nothing.
-- A dead job stored aside (payload::aside) keeps its side key; a trimmed entry's goes (same
-- slot: gator:{<queue>}:payload:<jid>).
-- allow-oom: it only moves a job and removes old ones.
--
-- Its KEYS and ARGV follow the outcome scripts' order (ack.lua, retry.lua): the in-flight
-- list and the payload as fetched first, then where the job goes and what it becomes.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  ZSET  gator:{<queue>}:dead (score = time of death, ms)
-- KEYS[3]  LIST  gator:{<queue>}:outbox
-- ARGV[1]  the payload exactly as fetched
-- ARGV[2]  the dead-set entry (the payload with its error, or a wrapper around unreadable text)
-- ARGV[3]  the most entries to keep; the oldest go first
-- ARGV[4]  the most age (ms) an entry may reach; older ones are removed
-- ARGV[5]  a workflow step's end to report to its workflow (store::workflow::Report as JSON),
--          appended to the outbox; '' for any other job
-- ARGV[6]  for a job that expired before it started (store::expiry): its record's tail after
--          the attempts, `<deadline ms> dead`, recorded `expired` instead of `dead`; '' (or
--          absent) for any other job
-- ARGV[7]  with ARGV[6]: the deadline (ms, Redis time) to judge the job by first, here, on
--          Redis's clock, so no job starts after it by a race (store::expiry): before it,
--          nothing is settled and the job starts; '' (or absent) to settle at once
-- ARGV[8]  with ARGV[7]: its running record's tail after its time (`<attempt> <process id>`),
--          written if it starts
-- Returns  { entries left in the dead set, or -1 if the job was not in flight; then for each
--            trimmed chain step with a next step, its chain's list queue and chain id };
--          or { -2, Redis time (ms) } if judged in time: it starts, recorded `running` then
-- Records  dead, expired, running
-- @flow_lib
-- @unique_lib
local bad = wrong_type(KEYS[2], 'zset') or wrong_type(KEYS[3], 'list')
if bad then return bad end
local now = nil
if ARGV[7] and ARGV[7] ~= '' then
  -- Judged and settled in one step: the time recorded is the time judged.
  now = now_ms()
  if now < tonumber(ARGV[7]) then
    if not redis.call('LPOS', KEYS[1], ARGV[1]) then return { -1 } end
    set_status(queue_prefix(KEYS[2]), ARGV[1], 'running ' .. now .. ' ' .. ARGV[8])
    return { -2, now }
  end
end
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return { -1 }
end
free_units(KEYS[1], ARGV[1])
unique_release(queue_prefix(KEYS[2]), ARGV[1])
now = now or now_ms()
redis.call('ZADD', KEYS[2], now, ARGV[2])
if ARGV[5] ~= '' then
  redis.call('RPUSH', KEYS[3], ARGV[5])
end
do
  local ok, doc = pcall(cjson.decode, ARGV[2])
  local reason, attempts = '', 0
  if ok and type(doc) == 'table' then
    if type(doc['error']) == 'string' then reason = doc['error'] end
    attempts = tonumber(doc['attempt']) or 0
  end
  -- An unreadable payload's entry wraps it: its jid is not known, and it has no record.
  local record = 'dead ' .. now .. ' ' .. attempts .. ' ' .. reason
  if ARGV[6] and ARGV[6] ~= '' then
    record = 'expired ' .. now .. ' ' .. attempts .. ' ' .. ARGV[6]
  end
  set_status(queue_prefix(KEYS[2]), ARGV[2], record, tonumber(ARGV[4]))
end
local oldest = '(' .. (now - tonumber(ARGV[4]))
local keep = tonumber(ARGV[3])
local result = { 0 }
local prefix = queue_prefix(KEYS[2])
local function note_chains(entries)
  for _, entry in ipairs(entries) do
    local jid = jid_of(entry)
    if jid then redis.call('DEL', qkey(prefix, 'payload', jid)) end
    if string.find(entry, '"next_jid"', 1, true) then
      local ok, doc = pcall(cjson.decode, entry)
      if ok and type(doc) == 'table' and type(doc['chain']) == 'table' then
        local link = doc['chain']
        if type(link['list_queue']) == 'string' and type(link['id']) == 'string'
            and link['next_jid'] then
          result[#result + 1] = link['list_queue']
          result[#result + 1] = link['id']
        end
      end
    end
  end
end
note_chains(redis.call('ZRANGE', KEYS[2], '-inf', oldest, 'BYSCORE'))
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', oldest)
local excess = redis.call('ZCARD', KEYS[2]) - keep
if excess > 0 then
  note_chains(redis.call('ZRANGE', KEYS[2], 0, excess - 1))
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, excess - 1)
end
result[1] = redis.call('ZCARD', KEYS[2])
return result
