#!lua
-- schedule.lua: enqueue a job to run at a time, deciding on Redis time whether it is already
-- due: due now, it goes to the tail of its queue; later, into the queue's scheduled set. A
-- chain's waiting steps go into its list in the same step, so a chain is stored whole or not
-- at all. A delay ('in') counts from Redis's clock, so a producer whose clock is off still
-- schedules the job that long from now. A job with flow options makes its queue controlled, and
-- a due job on a controlled queue is parked (flow_lib.lua).
--
-- KEYS[1]  ZSET  gator:{<queue>}:scheduled
-- KEYS[2]  LIST  gator:{<queue>}:queue
-- KEYS[3]  LIST  gator:{<queue>}:chain:<chain id>   (only for a chain with more than one step)
-- ARGV[1]  'at' (ARGV[2] is a time, ms since the Unix epoch) or 'in' (ARGV[2] is a delay, ms)
-- ARGV[2]  the time or the delay
-- ARGV[3]  the payload
-- ARGV[4]  the horizon (ms): a job due later than this from now waits in its minute's list
--          (later_lib.lua), not in the scheduled set
-- ARGV[5..]  the chain's waiting steps, in order (payloads)
-- Returns  the due time (ms) if the job was scheduled, 0 if it was due and went to its queue
-- @flow_lib
-- @later_lib
local bad = wrong_type(KEYS[1], 'zset') or wrong_queue(KEYS[2])
  or (KEYS[3] and wrong_type(KEYS[3], 'list'))
if bad then return bad end
local prefix = queue_prefix(KEYS[2])
if has_flow_options(ARGV[3]) then
  make_controlled(prefix)
end
local now = now_ms()
local due = tonumber(ARGV[2])
if ARGV[1] == 'in' then
  due = now + due
end
for i = 5, #ARGV, 1000 do
  redis.call('RPUSH', KEYS[3], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
if due <= now then
  push_job(prefix, ARGV[3], false, now)
  return 0
end
if due - now > tonumber(ARGV[4]) then
  later_push(prefix, due, ARGV[3])
else
  redis.call('ZADD', KEYS[1], due, ARGV[3])
end
set_status(prefix, ARGV[3], 'scheduled ' .. due)
return due
