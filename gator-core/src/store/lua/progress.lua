#!lua
-- progress.lua: record a running job's progress (store::progress::write), stamped with
-- Redis's clock, so that readers compare it with Redis time only. The worker coalesces a
-- job's reports (context::progress) so this runs at most a few times a second per job. Not
-- allow-oom: progress is worth less than the jobs' own writes at maxmemory.
--
-- KEYS[1]  STRING  gator:{<queue>}:progress:<jid>
-- ARGV[1]  the fraction done, 0 to 1, as text
-- ARGV[2]  the attempt reporting it
-- ARGV[3]  the note (cut by the worker to 1024 bytes), or ''
-- ARGV[4]  how long (ms) the record is kept after this write
-- Returns  the time written (Redis's clock, ms)
local now = now_ms()
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. now .. ' ' .. ARGV[2] .. ' ' .. ARGV[3],
  'PX', tonumber(ARGV[4]))
return now
