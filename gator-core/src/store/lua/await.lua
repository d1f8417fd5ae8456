#!lua flags=allow-oom
-- await.lua: a job ended its attempt waiting for a reply (ctx.await_reply): take it out of
-- its process's in-flight list, free its units on a controlled queue, record it
-- `awaiting <deadline> <key>`, and append its wait record to its queue's outbox, in one step.
-- The wait is registered in the replies' slot by store::reply::register (reply_wait.lua),
-- carried there from the outbox as a chain's next step is; a crash in between leaves the
-- record for the next drain.
-- allow-oom: it only moves a job.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  LIST  gator:{<queue>}:outbox
-- ARGV[1]  the payload exactly as fetched
-- ARGV[2]  the wait record (JSON: wait, jid, queue, timeout_ms, payload, then, ret)
-- ARGV[3]  the correlation key
-- ARGV[4]  the timeout, ms
-- ARGV[5]  `suspended` for a durable job's wait (`ctx.wait_for_reply`: recorded
--          `suspended <deadline> reply <key>`), else `awaiting` (`awaiting <deadline> <key>`)
-- Returns  1 if recorded, 0 if the job was not in flight
local bad = wrong_type(KEYS[2], 'list') if bad then return bad end
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
redis.call('RPUSH', KEYS[2], ARGV[2])
local prefix, process = string.match(KEYS[1], '^(.-}:)inflight:(.*)$')
local deadline = now_ms() + tonumber(ARGV[4])
if ARGV[5] == 'suspended' then
  set_status(prefix, ARGV[1], 'suspended ' .. deadline .. ' reply ' .. ARGV[3])
else
  set_status(prefix, ARGV[1], 'awaiting ' .. deadline .. ' ' .. ARGV[3])
end
if redis.call('EXISTS', qkey(prefix, 'units', process)) == 0 then
  return 1
end
-- @flow_lib
free_units(KEYS[1], ARGV[1])
return 1
