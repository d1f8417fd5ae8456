#!lua flags=allow-oom
-- wf_create.lua: store a new workflow whole, in the slot of its home queue (its first step's):
-- every step's record, the steps with no parent in the push hash (to be pushed to their queues
-- by store::workflow::push_pending), the others waiting with their count of parents left, and
-- the workflow in its home queue's set of workflows with steps to push, which recovery drains
-- if the dispatcher dies before it pushed them.
-- allow-oom: refusing here would lose nothing, but a workflow's steps are jobs accepted.
--
-- KEYS[1]  HASH  gator:{<home>}:wf:<uuid>
-- KEYS[2]  HASH  gator:{<home>}:wfpush:<uuid>
-- KEYS[3]  SET   gator:{<home>}:wfpushing
-- ARGV[1]  the workflow id, `<uuid>@<home>`
-- ARGV[2]  the number of steps n
-- ARGV[3..] five per step: jid, the step's record (JSON: job, queue, parents, policy), its
--          children's jids as a JSON array ('' for none), its number of parents, its payload
-- Returns  the push hash: jid, payload, ... (the steps to push now)
for i = 1, 3 do
  local bad = wrong_type(KEYS[i], i == 3 and 'set' or 'hash')
  if bad then return bad end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.error_reply('ERR workflow ' .. ARGV[1] .. ' exists already')
end
local n = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'state', 'running', 'left', n, 'created', now_ms())
for i = 0, n - 1 do
  local b = 3 + i * 5
  local jid, record, children, parents, payload =
    ARGV[b], ARGV[b + 1], ARGV[b + 2], tonumber(ARGV[b + 3]), ARGV[b + 4]
  redis.call('HSET', KEYS[1], 's:' .. jid, record)
  if children ~= '' then
    redis.call('HSET', KEYS[1], 'c:' .. jid, children)
  end
  if parents == 0 then
    redis.call('HSET', KEYS[1], 'st:' .. jid, 'released')
    redis.call('HSET', KEYS[2], jid, payload)
  else
    redis.call('HSET', KEYS[1], 'st:' .. jid, 'waiting', 'n:' .. jid, parents, 'w:' .. jid, payload)
  end
end
redis.call('SADD', KEYS[3], ARGV[1])
return redis.call('HGETALL', KEYS[2])
