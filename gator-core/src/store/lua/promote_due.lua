#!lua flags=allow-oom
-- promote_due.lua: move the jobs of one queue that are due by Redis time from a sorted set
-- (scheduled or retry) to the tail of the queue's list, in one atomic step: when many workers
-- poll at once, a job is either still in the set or on the list, never both and never neither.
-- Redis's clock decides what is due, so a worker whose own clock runs ahead promotes nothing
-- early.
-- allow-oom: it only moves jobs.
--
-- KEYS[1]  ZSET  gator:{<queue>}:scheduled or gator:{<queue>}:retry (score = due time, ms)
-- KEYS[2]  LIST  gator:{<queue>}:queue
-- ARGV[1]  the most jobs to move in this call (keeps each call short; unpack() has a limit)
-- Returns  { number of jobs moved, due time (ms) of the earliest job left or -1 if none,
--            now (Redis time, ms) }
local bad = wrong_type(KEYS[2], 'list') if bad then return bad end
local now = now_ms()
local due = redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, ARGV[1])
if #due > 0 then
  redis.call('ZREM', KEYS[1], unpack(due))
  redis.call('RPUSH', KEYS[2], unpack(due))
end
local next_due = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #next_due == 0 then
  return { #due, -1, now }
end
return { #due, tonumber(next_due[2]), now }
