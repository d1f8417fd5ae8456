#!lua flags=allow-oom
-- lease.lua: take or renew one process's lease on a queue, on Redis time: its entry in the
-- queue's lease set, scored by when it expires. A process renews it every quarter of its
-- length; once it expires, recover.lua puts the process's in-flight jobs back.
--
-- allow-oom: renewing rewrites a score, and a lease that cannot be renewed at maxmemory would
-- have a live worker's jobs run twice.
--
-- KEYS[1]  ZSET  gator:{<queue>}:leases
-- ARGV[1]  the process id
-- ARGV[2]  the lease length, ms
-- Returns  { state, now }: state 0 if the process held no lease, 1 if its lease was live,
--          2 if it had expired (its in-flight jobs may have been put back meanwhile);
--          now is Redis time, ms since the Unix epoch
local now = now_ms()
local old = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local state = 0
if old then
  if tonumber(old) > now then state = 1 else state = 2 end
end
return { state, now }
