#!lua
-- enqueue.lua: put jobs on their queue (all of one queue, in order). A plain queue gets them
-- at the tail of its list; a controlled queue (see flow_lib.lua) parks them by priority and
-- parking key. The check and the push are one step, so a pause or a limit set at any moment
-- holds for every job, whatever the producer knew. A job with flow options makes its queue
-- controlled first. Not allow-oom: at maxmemory an enqueue fails, and the caller is told.
--
-- KEYS[1]  LIST  gator:{<queue>}:queue
-- KEYS[2]  HASH  gator:{<queue>}:flow
-- ARGV[1]  flags: '-' for none; contains 'f' if a job carries flow options (priority, cost, limit key,
--          critical, rate, windows), 't' to return each job's ticket
-- ARGV[2..]  the payloads, in order
-- Returns  0 if the jobs went to the list, 1 if they were parked; with 't', for each job its
--          ticket { seq, ahead, expected start (ms, -1 if the queue has no rate limit) }, or an
--          empty list if the queue is plain

-- The plain path first, before the flow library is defined: a plain queue pays one EXISTS.
-- (A key of the wrong type makes RPUSH fail before it writes anything.) Clients push plain
-- jobs with a bare RPUSH instead, and use this script for jobs with flow options, tickets, and
-- the queues whose RPUSH failed with WRONGTYPE: the controlled ones.
if ARGV[1] == '-' and redis.call('EXISTS', KEYS[2]) == 0 then
  for i = 2, #ARGV, 1000 do
    redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
  local prefix = queue_prefix(KEYS[1])
  for i = 2, #ARGV do set_status(prefix, ARGV[i], 'queued') end
  return 0
end
-- @flow_lib
local bad = wrong_queue(KEYS[1]) or wrong_type(KEYS[2], 'hash')
if bad then return bad end
local prefix = queue_prefix(KEYS[2])
local tickets = string.find(ARGV[1], 't', 1, true)
if string.find(ARGV[1], 'f', 1, true) then
  make_controlled(prefix)
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  for i = 2, #ARGV, 1000 do
    redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
  for i = 2, #ARGV do set_status(prefix, ARGV[i], 'queued') end
  if tickets then return {} end
  return 0
end
local now = now_ms()
local issued = {}
for i = 2, #ARGV do
  local seq, set, member, flow = park(prefix, ARGV[i], now, false)
  if tickets then issued[#issued + 1] = ticket(prefix, seq, set, member, flow, now) end
end
if tickets then return issued end
return 1
