#!lua
-- chain_advance.lua: after a chain step succeeded, move the next step from the chain's list
-- to its queue, in one atomic step, so a crash cannot lose or duplicate the rest of the chain.
-- Idempotent: the step moves only if it is still at the head of the list, so recording the
-- same success twice (a retried write) does not skip a step.
--
-- KEYS[1]  LIST  gator:{<queue>}:chain:<chain id> (the steps still waiting, in order)
-- KEYS[2]  LIST  gator:{<next queue>}:queue
-- ARGV[1]  the jid of the next step
-- Returns  1 if the next step was enqueued, 0 if it was not at the head (already moved)
local head = redis.call('LINDEX', KEYS[1], 0)
if not head then
  return 0
end
local ok, step = pcall(cjson.decode, head)
if not ok or step['jid'] ~= ARGV[1] then
  return 0
end
redis.call('LPOP', KEYS[1])
redis.call('RPUSH', KEYS[2], head)
return 1
