#!lua flags=allow-oom
-- ack.lua: record that a job succeeded: take it out of its process's in-flight list and, for a
-- chain step, move the chain's next step to its queue, all in one atomic step. Nothing is
-- written if the job was no longer in flight (it was recovered as an orphan and is queued
-- again, so that other copy settles it): a job leaves the in-flight record exactly once.
-- (A success that starts no chain step is settled with a plain LREM instead: see
-- store::inflight::ack_and_take.)
-- allow-oom: it only moves or removes jobs, and a Redis at maxmemory must still settle them.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  LIST  gator:{<queue>}:chain:<chain id>      (only for a chain step with a next step)
-- KEYS[3]  LIST  gator:{<next queue>}:queue            (likewise)
-- ARGV[1]  the payload exactly as fetched
-- ARGV[2]  the jid of the chain's next step            (likewise)
-- Returns  0 if the job was not in flight; 1 if acked; 2 if acked and the next step enqueued
for i = 2, #KEYS do
  local bad = wrong_type(KEYS[i], 'list')
  if bad then return bad end
end
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
if #KEYS < 3 then
  return 1
end
local head = redis.call('LINDEX', KEYS[2], 0)
if not head then
  return 1
end
local ok, step = pcall(cjson.decode, head)
if not ok or step['jid'] ~= ARGV[2] then
  return 1
end
redis.call('LPOP', KEYS[2])
redis.call('RPUSH', KEYS[3], head)
return 2
