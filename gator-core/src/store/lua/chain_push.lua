#!lua flags=allow-oom
-- chain_push.lua: the second half of handing a chain's next step to its queue, in the slot of
-- that queue: push the step unless it was pushed before. The guard key, set in the same step
-- and kept for an hour (far longer than a hand-off takes), makes a repeated hand-off (after a crash between the halves) a no-op, so
-- the queue never holds two copies of a step. On a controlled queue the step is parked
-- (flow_lib.lua).
-- A step without flow options going to a plain queue is pushed before the flow library is
-- defined (a tenth of the script's time).
-- allow-oom: it only moves a job.
--
-- KEYS[1]  STRING  gator:{<next queue>}:handed:<jid>
-- KEYS[2]  LIST    gator:{<next queue>}:queue
-- ARGV[1]  the step's payload
-- ARGV[2]  how long the guard is kept, ms
-- Returns  1 if pushed, 0 if it had been pushed before
local bad = wrong_queue(KEYS[2]) if bad then return bad end
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', tonumber(ARGV[2])) then
  return 0
end
local prefix = queue_prefix(KEYS[2])
if not string.find(ARGV[1], '"flow"', 1, true) and redis.call('EXISTS', qkey(prefix, 'flow')) == 0 then
  set_status(prefix, ARGV[1], 'queued')
  redis.call('RPUSH', KEYS[2], ARGV[1])
  return 1
end
-- @flow_lib
if has_flow_options(ARGV[1]) then
  make_controlled(prefix)
end
push_job(prefix, ARGV[1], false)
return 1
