#!lua
-- cron_fire.lua: enqueue a periodic entry's job for one tick, exactly once across every worker
-- (see gator_core::cron). Every worker computes the entry's latest tick at or before Redis's
-- `TIME` and calls this; the compare-and-set on the entry's last fired tick and the push are
-- one atomic step in the queue's slot, so only the first call for a tick pushes, and a call for
-- an older tick (a worker that was slow to get here) pushes nothing. After downtime the workers
-- only ever ask for the latest tick: missed ticks fire once, not once each. The push is
-- flow_lib's push_job: a controlled (paused, limited) queue parks the job, and the job's status
-- record is written. With tick `now` (`gator-worker cron run NAME`) the job is pushed whatever
-- the last tick or the pause, and the last fired tick is left alone.
--
-- KEYS[1]  HASH  gator:{<queue>}:cron (entry name -> definition JSON)
-- KEYS[2]  HASH  gator:{<queue>}:cron_fired (entry name -> last fired tick, ms)
-- KEYS[3]  HASH  gator:{<queue>}:cron_paused (entry name -> when it was paused, ms)
-- KEYS[4]  LIST  gator:{<queue>}:queue
-- ARGV[1]  the entry's name
-- ARGV[2]  the tick (ms since the epoch, at or before Redis's clock), or `now`
-- ARGV[3]  the job's payload (JSON)
-- ARGV[4]  flags: '-' for none; 'f' if the job carries flow options (makes the queue controlled)
-- Returns  1 if the job was pushed; 0 if this tick or a later one was already fired; -1 if the
--          entry is paused; -2 if there is no such entry (removed meanwhile); -3 if the tick is
--          after Redis's clock
-- @flow_lib
local bad = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'hash')
  or wrong_type(KEYS[3], 'hash') or wrong_queue(KEYS[4])
if bad then return bad end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return -2 end
local now = now_ms()
if ARGV[2] ~= 'now' then
  if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then return -1 end
  local tick = tonumber(ARGV[2])
  if not tick then return redis.error_reply('ERR the tick must be ms or `now`, not ' .. ARGV[2]) end
  if tick > now then return -3 end
  local last = tonumber(redis.call('HGET', KEYS[2], ARGV[1])) or 0
  if tick <= last then return 0 end
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
local prefix = queue_prefix(KEYS[4])
if string.find(ARGV[4], 'f', 1, true) then make_controlled(prefix) end
push_job(prefix, ARGV[3], false, now)
return 1
