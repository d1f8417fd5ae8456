#!lua flags=allow-oom
-- cancelled.lua: settle a job whose cancellation was asked for (or that its retry strategy
-- discarded, with ARGV[5] `discarded`) (its jid is in the queue's
-- cancelling set): take it out of its process's in-flight list, free the units it held on a
-- controlled queue, record it cancelled, and take its jid out of the cancelling set, in one
-- step. It is never retried. Nothing is written if it was no longer in flight (recovered
-- meanwhile: its recovered copy is settled the same way by the worker that fetches it).
-- A workflow step's end is also recorded in the queue's outbox, as kill.lua does.
-- A unique job's lock (unique_lib.lua) is released in the same step.
-- A job stored aside (payload::aside) loses its side key in the same step: it will not run.
-- allow-oom: it only removes, and a Redis at maxmemory must still settle jobs.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  SET   gator:{<queue>}:cancelling
-- KEYS[3]  LIST  gator:{<queue>}:outbox
-- (and the job's side key, gator:{<queue>}:payload:<ARGV[2]>, deleted: same slot)
-- ARGV[1]  the payload exactly as fetched
-- ARGV[2]  its jid
-- ARGV[3]  how long (ms) the cancelled record is kept
-- ARGV[4]  a workflow step's report of its end, for the outbox; '' for any other job
-- ARGV[5]  the state to record: `cancelled` ('' for it), `discarded` (a retry strategy
--          gave the job up), or `expired` (not started by its deadline, dropped)
-- ARGV[6]  the record's tail after its time (`<attempts> <error>` for `discarded`,
--          `<attempts> <deadline ms> drop` for `expired`), or ''
-- ARGV[7]  for `expired`: the deadline (ms, Redis time) to judge the job by first, here, on
--          Redis's clock, so no job starts after it by a race (store::expiry): before it,
--          nothing is settled and the job starts; '' (or absent) to settle at once
-- ARGV[8]  with ARGV[7]: its running record's tail after its time (`<attempt> <process id>`),
--          written if it starts
-- Returns  1 if settled, 0 if the job was not in flight; or { -2, Redis time (ms) } if
--          judged in time: it starts, recorded `running` then
-- Records  cancelled, discarded, expired, running
-- @flow_lib
-- @unique_lib
local bad = wrong_type(KEYS[2], 'set') or wrong_type(KEYS[3], 'list')
if bad then return bad end
local now = now_ms()
if ARGV[7] and ARGV[7] ~= '' and now < tonumber(ARGV[7]) then
  -- In time: judged here, so no job starts after its deadline by a race.
  if not redis.call('LPOS', KEYS[1], ARGV[1]) then return 0 end
  set_status(queue_prefix(KEYS[1]), ARGV[1], 'running ' .. now .. ' ' .. ARGV[8])
  return { -2, now }
end
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
free_units(KEYS[1], ARGV[1])
unique_release(queue_prefix(KEYS[1]), ARGV[1])
redis.call('SREM', KEYS[2], ARGV[2])
redis.call('DEL', qkey(queue_prefix(KEYS[1]), 'payload', ARGV[2]))
local state = (ARGV[5] and ARGV[5] ~= '') and ARGV[5] or 'cancelled'
local tail = (ARGV[6] and ARGV[6] ~= '') and (' ' .. ARGV[6]) or ''
set_status(queue_prefix(KEYS[1]), ARGV[1], state .. ' ' .. now .. tail, tonumber(ARGV[3]))
if ARGV[4] ~= '' then
  redis.call('RPUSH', KEYS[3], ARGV[4])
end
return 1
