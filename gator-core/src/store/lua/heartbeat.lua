#!lua flags=allow-oom
-- heartbeat.lua: record that a worker process is alive, on Redis time, forget the processes
-- whose registration expired, and count the live ones. The registry is for counting and
-- showing the fleet; what a process holds is leased per queue (lease.lua), not here.
-- allow-oom: it rewrites a score; a fleet at maxmemory must still count itself.
--
-- KEYS[1]  ZSET  gator:processes (score = when the registration expires, ms)
-- ARGV[1]  the process id
-- ARGV[2]  how long the registration lasts unless renewed, ms
-- Returns  { live processes, now }: now is Redis time, ms since the Unix epoch
local now = now_ms()
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return { redis.call('ZCARD', KEYS[1]), now }
