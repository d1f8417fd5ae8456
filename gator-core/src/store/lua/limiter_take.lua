#!lua flags=allow-oom
-- limiter_take.lua: take one start (times the job's cost) of a shared rate limiter, on its own
-- slot and its node's Redis time (GCRA, as flow_lib.lua's rate_wait and rate_take). A worker
-- calls it when admit.lua says the job at the head of a parking key names a limiter its queue
-- does not define (state 3), then hands the answer to admit.lua: a start taken here, or how
-- long the limiter is closed (a duration, never a time: the two nodes' clocks are not compared).
-- A start taken that admit.lua then does not use (another worker took the job, the queue's
-- concurrency limit was full) is lost: a shared limiter may run below its rate, never above.
-- allow-oom: a full Redis must not stop rate-limited jobs.
--
-- KEYS[1]  STRING  gator:limiter:{<name>}:rate
-- KEYS[2]  STRING  gator:limiter:{<name>}:tat
-- ARGV[1]  the job's cost (starts to take)
-- Returns  0 if the start was taken (or the limiter has no rate: nothing to obey), else how
--          many ms until it may be
local spec = redis.call('GET', KEYS[1])
local count, interval, burst = string.match(spec or '', '^(%d+) (%d+) (%d+)$')
if not count or tonumber(count) == 0 then return 0 end
local now = now_ms()
local t = tonumber(interval) / tonumber(count)
local tat = tonumber(redis.call('GET', KEYS[2])) or now
local at = math.max(tat, now) - (tonumber(burst) - 1) * t
if at > now then return math.ceil(at - now) end
if tat < now - t then tat = now end
tat = tat + t * tonumber(ARGV[1])
redis.call('SET', KEYS[2], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1000)
return 0
