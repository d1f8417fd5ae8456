#!lua flags=allow-oom
-- promote_due.lua: move the jobs of one queue that are due by Redis time from its scheduled
-- and retry sets to the tail of the queue's list, in one atomic step: when many workers poll
-- at once, a job is either still in a set or on the list, never both and never neither.
-- Redis's clock decides what is due, so a worker whose own clock runs ahead promotes nothing
-- early. On a controlled queue the jobs are parked instead (flow_lib.lua). Both sets in one call: an idle worker's poll costs each queue one script, not two.
-- allow-oom: it only moves jobs.
--
-- KEYS[1]  LIST  gator:{<queue>}:queue
-- KEYS[2]  ZSET  gator:{<queue>}:scheduled (score = due time, ms)
-- KEYS[3]  ZSET  gator:{<queue>}:retry (score = due time, ms)
-- ARGV[1]  the most jobs to move from each set in this call (keeps each call short; unpack()
--          has a limit)
-- Returns  { number of jobs moved, due time (ms) of the earliest job left in either set or -1
--            if none, now (Redis time, ms), 1 if a set had more due than ARGV[1] else 0 }
-- The minutes' lists of jobs scheduled beyond the horizon (later_lib.lua) that start within
-- LATER_LEAD_MS go into the scheduled set first, ARGV[1] jobs at most; the earliest list left
-- counts as due LATER_LEAD_MS before its minute, so the poller wakes for it.
-- @flow_lib
-- @later_lib
local bad = wrong_queue(KEYS[1]) if bad then return bad end
local now = now_ms()
local prefix = queue_prefix(KEYS[1])
local controlled = is_controlled(prefix)
local moved, next_due, more = 0, -1, 0
local _, thaw_more = later_thaw(prefix, KEYS[2], now + LATER_LEAD_MS, tonumber(ARGV[1]))
if thaw_more then more = 1 end
local later = later_next(prefix)
if later then next_due = later - LATER_LEAD_MS end
for i = 2, 3 do
  local due = redis.call('ZRANGE', KEYS[i], '-inf', now, 'BYSCORE', 'LIMIT', 0, ARGV[1])
  if #due > 0 then
    redis.call('ZREM', KEYS[i], unpack(due))
    if controlled then
      for _, job in ipairs(due) do park(prefix, job, now, false) end
    else
      redis.call('RPUSH', KEYS[1], unpack(due))
      set_statuses(prefix, due, 'queued')
    end
    moved = moved + #due
    if #due >= tonumber(ARGV[1]) then more = 1 end
  end
  local first = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
  if #first > 0 then
    local score = tonumber(first[2])
    if next_due < 0 or score < next_due then next_due = score end
  end
end
return { moved, next_due, now, more }
