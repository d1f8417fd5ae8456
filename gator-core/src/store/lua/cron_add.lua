#!lua
-- cron_add.lua: store a periodic entry's definition (see gator_core::cron), replacing the one
-- of that name, and, for a new entry, record now (Redis time) as its last fired tick: a newly
-- added entry never fires a tick from before it was added. Re-adding an entry (every worker
-- publishes the entries declared in code at start) keeps its last fired tick and its pause.
-- Written after the entry's name went into the global index `gator:cron` (its own command).
--
-- KEYS[1]  HASH  gator:{<queue>}:cron (entry name -> definition JSON)
-- KEYS[2]  HASH  gator:{<queue>}:cron_fired (entry name -> last fired tick, ms)
-- ARGV[1]  the entry's name
-- ARGV[2]  its definition (JSON)
-- Returns  the entry's last fired tick (ms since the epoch): now if it is new
local bad = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'hash')
if bad then return bad end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local now = now_ms()
if redis.call('HSETNX', KEYS[2], ARGV[1], now) == 1 then return now end
return tonumber(redis.call('HGET', KEYS[2], ARGV[1]))
