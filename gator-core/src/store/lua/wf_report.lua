#!lua flags=allow-oom
-- wf_report.lua: a workflow step ended; record it in its workflow, in the slot of the
-- workflow's home queue. Reported from its own queue's outbox (ack.lua on success, kill.lua on
-- death: store::workflow::report), so a report may come twice: a step already counted is not
-- counted again, so each parent's success is counted exactly once, by jid.
-- On success the result is kept and each child whose parents have all ended moves to the
-- push hash. On death the step's policy decides: halt (the default: its children wait, and
-- retrying it from the dead set resumes the workflow), continue (its children go on without
-- its result), or fail (the workflow fails and its waiting steps are cancelled).
-- allow-oom: it moves steps that were accepted, and a Redis at maxmemory must still settle them.
--
-- KEYS[1]  HASH  gator:{<home>}:wf:<uuid>
-- KEYS[2]  HASH  gator:{<home>}:wfpush:<uuid>
-- KEYS[3]  SET   gator:{<home>}:wfpushing
-- ARGV[1]  the workflow id
-- ARGV[2]  the step's jid
-- ARGV[3]  `done`, `dead` or `cancelled` (a cancelled step is under its policy as a dead one)
-- ARGV[4]  its result as JSON ('' for none)
-- ARGV[5]  how long (ms) a finished workflow is kept
-- Returns  the push hash: jid, payload, ... (the steps to push now: those it released, and any
--          a crash left); empty if the workflow is gone (finished and expired)
-- @wf_lib
local wf, push, pushing, id, jid = KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2]
local ttl = tonumber(ARGV[5])
local state = redis.call('HGET', wf, 'st:' .. jid)
if not state or state == 'done' or state == 'continued' then
  return redis.call('HGETALL', push)
end
if ARGV[3] == 'done' then
  if ARGV[4] ~= '' then redis.call('HSET', wf, 'r:' .. jid, ARGV[4]) end
  redis.call('HSET', wf, 'st:' .. jid, 'done')
  count(wf, push, pushing, id, jid, ttl)
  return redis.call('HGETALL', push)
end
-- Dead or cancelled: the step's policy decides.
local ended = ARGV[3] == 'cancelled' and 'cancelled' or 'dead'
local ok, record = pcall(cjson.decode, redis.call('HGET', wf, 's:' .. jid) or '')
local policy = ok and type(record) == 'table' and record['policy'] or 'halt'
if policy == 'continue' then
  redis.call('HSET', wf, 'st:' .. jid, 'continued')
  count(wf, push, pushing, id, jid, ttl)
elseif policy == 'fail' then
  redis.call('HSET', wf, 'st:' .. jid, ended)
  if redis.call('HGET', wf, 'state') == 'running' then
    cancel_waiting(wf)
    redis.call('HSET', wf, 'state', 'failed', 'ended', now_ms())
    redis.call('PEXPIRE', wf, ttl)
  end
else
  redis.call('HSET', wf, 'st:' .. jid, ended)
end
return redis.call('HGETALL', push)
