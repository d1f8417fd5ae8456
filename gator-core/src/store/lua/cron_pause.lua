#!lua
-- cron_pause.lua: pause or resume a periodic entry (see gator_core::cron) in one step on Redis
-- time, so that a pause or resume racing a remove or another resume cannot leave a stray pause
-- or move the last tick twice. A resume of a paused entry records now as its last fired tick:
-- it fires its next tick, not one it missed while paused. Resuming an entry that is not paused
-- keeps its last tick (moving it could swallow a tick that is due but not yet fired).
--
-- KEYS[1]  HASH  gator:{<queue>}:cron (entry name -> definition JSON)
-- KEYS[2]  HASH  gator:{<queue>}:cron_fired (entry name -> last fired tick, ms)
-- KEYS[3]  HASH  gator:{<queue>}:cron_paused (entry name -> when it was paused, ms)
-- ARGV[1]  the entry's name
-- ARGV[2]  'pause' or 'resume'
-- Returns  1 if the entry exists (and is now paused, or running), 0 if it does not
local bad = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'hash')
  or wrong_type(KEYS[3], 'hash')
if bad then return bad end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
local now = now_ms()
if ARGV[2] == 'pause' then
  redis.call('HSET', KEYS[3], ARGV[1], now)
elseif redis.call('HDEL', KEYS[3], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[1], now)
end
return 1
