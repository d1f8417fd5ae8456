#!lua flags=allow-oom
-- retry.lua: record that a job failed and runs again later: take it out of its process's
-- in-flight list and add its updated payload to the retry set, in one atomic step. Nothing is
-- written if the job was no longer in flight (recovered as an orphan and queued again). The
-- due time is Redis time plus the delay, so a worker's skewed clock cannot move it.
-- allow-oom: it only moves a job.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  ZSET  gator:{<queue>}:retry
-- ARGV[1]  the payload exactly as fetched
-- ARGV[2]  the updated payload (attempt, error, failed_at, ...)
-- ARGV[3]  the delay before it runs again, ms
-- Returns  the due time (ms, its score) if recorded, 0 if the job was not in flight
-- @flow_lib
local bad = wrong_type(KEYS[2], 'zset') if bad then return bad end
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
free_units(KEYS[1], ARGV[1])
local due = now_ms() + tonumber(ARGV[3])
redis.call('ZADD', KEYS[2], due, ARGV[2])
local prefix = queue_prefix(KEYS[2])
if KEYS[2] == qkey(prefix, 'retry') then
  local ok, doc = pcall(cjson.decode, ARGV[2])
  local attempt, reason = 0, ''
  if ok and type(doc) == 'table' then
    attempt = tonumber(doc['attempt']) or 0
    if type(doc['error']) == 'string' then reason = doc['error'] end
  end
  set_status(prefix, ARGV[2], 'retrying ' .. due .. ' ' .. attempt .. ' ' .. reason)
else
  set_status(prefix, ARGV[2], 'scheduled ' .. due)
end
return due
