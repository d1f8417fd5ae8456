#!lua
-- wf_add.lua: add a step to a workflow that is running (or done, which runs again), after
-- steps it already has, in the slot of the workflow's home queue. Parents that already
-- succeeded (or ended with policy continue) count as done: with all of them so, the step goes
-- straight to the push hash.
--
-- KEYS[1]  HASH  gator:{<home>}:wf:<uuid>
-- KEYS[2]  HASH  gator:{<home>}:wfpush:<uuid>
-- KEYS[3]  SET   gator:{<home>}:wfpushing
-- ARGV[1]  the workflow id
-- ARGV[2]  the new step's jid
-- ARGV[3]  its record (JSON: job, queue, parents, policy)
-- ARGV[4]  its parents' jids, a JSON array
-- ARGV[5]  its payload
-- Returns  the push hash: jid, payload, ... (the steps to push now); an error if the
--          workflow is unknown or ended otherwise than done, or a parent is not one of its
--          steps
-- @wf_lib
local wf, push, pushing, id, jid = KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2]
local state = redis.call('HGET', wf, 'state')
if not state then
  return redis.error_reply('ERR no workflow ' .. id)
end
if state ~= 'running' and state ~= 'done' then
  return redis.error_reply('ERR workflow ' .. id .. ' is ' .. state)
end
local parents = cjson.decode(ARGV[4])
local waiting = {}
for _, parent in ipairs(parents) do
  local ended = redis.call('HGET', wf, 'st:' .. parent)
  if not ended then
    return redis.error_reply('ERR workflow ' .. id .. ' has no step ' .. parent)
  end
  if ended ~= 'done' and ended ~= 'continued' then waiting[#waiting + 1] = parent end
end
if state == 'done' then
  redis.call('HSET', wf, 'state', 'running')
  redis.call('HDEL', wf, 'ended')
  redis.call('PERSIST', wf)
end
redis.call('HSET', wf, 's:' .. jid, ARGV[3])
redis.call('HINCRBY', wf, 'left', 1)
for _, parent in ipairs(waiting) do
  local children = redis.call('HGET', wf, 'c:' .. parent)
  local list = children and cjson.decode(children) or {}
  list[#list + 1] = jid
  redis.call('HSET', wf, 'c:' .. parent, cjson.encode(list))
end
if #waiting == 0 then
  redis.call('HSET', wf, 'st:' .. jid, 'released')
  redis.call('HSET', push, jid, ARGV[5])
  redis.call('SADD', pushing, id)
else
  redis.call('HSET', wf, 'st:' .. jid, 'waiting', 'n:' .. jid, #waiting, 'w:' .. jid, ARGV[5])
end
return redis.call('HGETALL', push)
