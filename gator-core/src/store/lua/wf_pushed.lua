#!lua flags=allow-oom
-- wf_pushed.lua: a released workflow step is on its queue (chain_push.lua, in that queue's
-- slot); take it out of the push hash, and the workflow out of the home queue's set of
-- workflows with steps to push once none is left, in the slot of the workflow's home queue.
-- allow-oom: it only removes.
--
-- KEYS[1]  HASH  gator:{<home>}:wfpush:<uuid>
-- KEYS[2]  SET   gator:{<home>}:wfpushing
-- ARGV[1]  the workflow id
-- ARGV[2]  the step's jid
-- Returns  the steps still to push
redis.call('HDEL', KEYS[1], ARGV[2])
local left = redis.call('HLEN', KEYS[1])
if left == 0 then
  redis.call('SREM', KEYS[2], ARGV[1])
end
return left
