#!lua flags=allow-oom
-- wf_cancel.lua: cancel a running workflow, in the slot of its home queue: it becomes
-- `cancelled`, its waiting steps and the released steps not yet pushed are cancelled, and the
-- steps already on their queues are returned, for the caller to cancel each in its own queue's
-- slot (cancel.lua). The workflow expires after ARGV[2] ms.
-- allow-oom: it only removes and records.
--
-- KEYS[1]  HASH  gator:{<home>}:wf:<uuid>
-- KEYS[2]  HASH  gator:{<home>}:wfpush:<uuid>
-- KEYS[3]  SET   gator:{<home>}:wfpushing
-- ARGV[1]  the workflow id
-- ARGV[2]  how long (ms) the cancelled workflow is kept
-- Returns  the released steps, jid and queue in turn; an error if the workflow is unknown;
--          nothing (an empty array) if it had already ended
-- @wf_lib
local wf, push, pushing = KEYS[1], KEYS[2], KEYS[3]
local state = redis.call('HGET', wf, 'state')
if not state then
  return redis.error_reply('ERR no workflow ' .. ARGV[1])
end
if state ~= 'running' then
  return {}
end
cancel_waiting(wf)
for _, jid in ipairs(redis.call('HKEYS', push)) do
  redis.call('HSET', wf, 'st:' .. jid, 'cancelled')
end
redis.call('DEL', push)
redis.call('SREM', pushing, ARGV[1])
redis.call('HSET', wf, 'state', 'cancelled', 'ended', now_ms())
redis.call('PEXPIRE', wf, tonumber(ARGV[2]))
local released = {}
local fields = redis.call('HGETALL', wf)
for i = 1, #fields, 2 do
  local jid = string.match(fields[i], '^st:(.*)$')
  if jid and fields[i + 1] == 'released' then
    local ok, record = pcall(cjson.decode, redis.call('HGET', wf, 's:' .. jid) or '')
    if ok and type(record) == 'table' and type(record['queue']) == 'string' then
      released[#released + 1] = jid
      released[#released + 1] = record['queue']
    end
  end
end
return released
