#!lua flags=allow-oom
-- chain_take.lua: the first half of handing a chain's next step to its queue, in the slot of
-- the chain's list: take the step off the head of the list into the hand-off hash, where it
-- stays until chain_push.lua has put it on its queue. Idempotent: a step already taken is
-- returned from the hash again, and a step no longer at the head (handed already, or its
-- chain deleted) returns nil.
-- allow-oom: it only moves a job.
--
-- KEYS[1]  LIST  gator:{<list queue>}:chain:<chain id>
-- KEYS[2]  HASH  gator:{<list queue>}:handoff
-- ARGV[1]  the jid of the step to take
-- Returns  the step's payload, or nil if there is nothing to hand over
for i = 1, 2 do
  local bad = wrong_type(KEYS[i], i == 1 and 'list' or 'hash')
  if bad then return bad end
end
local taken = redis.call('HGET', KEYS[2], ARGV[1])
if taken then
  return taken
end
local head = redis.call('LINDEX', KEYS[1], 0)
if not head then
  return false
end
local ok, step = pcall(cjson.decode, head)
if not ok or type(step) ~= 'table' or step['jid'] ~= ARGV[1] then
  return false
end
redis.call('LPOP', KEYS[1])
redis.call('HSET', KEYS[2], ARGV[1], head)
return head
