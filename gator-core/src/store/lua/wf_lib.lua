-- wf_lib.lua: what the workflow scripts share, loaded after prelude.lua (`-- @wf_lib`).
--
-- A workflow's hash (KEYS[1], gator:{<home>}:wf:<uuid>) holds `state` (running, done, failed,
-- cancelled), `left` (steps not yet ended), `created`, and per step `<field>:<jid>`:
--   s   its record (JSON: job, queue, parents, policy)   c   its children's jids (JSON array)
--   st  waiting | released | done | continued | dead | cancelled
--   n   parents not yet succeeded (while waiting)        w   its payload (while waiting)
--   r   its result (JSON), once done
--
-- release(wf, push, pushing, id, jid)  a waiting step whose parents all ended moves to the
--                                      push hash
-- count(wf, push, pushing, id, jid, ttl) a step that ended in a way its children go on from
--                                      (done, or dead with policy continue): each child's
--                                      count drops, and the workflow is done when none is left
-- cancel_waiting(wf)                   every waiting step becomes cancelled; returns their jids
local function release(wf, push, pushing, id, jid)
  local payload = redis.call('HGET', wf, 'w:' .. jid)
  if not payload then return end
  redis.call('HSET', push, jid, payload)
  redis.call('HDEL', wf, 'w:' .. jid, 'n:' .. jid)
  redis.call('HSET', wf, 'st:' .. jid, 'released')
  redis.call('SADD', pushing, id)
end

local function count(wf, push, pushing, id, jid, ttl)
  local running = redis.call('HGET', wf, 'state') == 'running'
  local children = redis.call('HGET', wf, 'c:' .. jid)
  if children then
    for _, child in ipairs(cjson.decode(children)) do
      local left = redis.call('HINCRBY', wf, 'n:' .. child, -1)
      if left <= 0 and running and redis.call('HGET', wf, 'st:' .. child) == 'waiting' then
        release(wf, push, pushing, id, child)
      end
    end
  end
  local left = redis.call('HINCRBY', wf, 'left', -1)
  if left <= 0 and running then
    redis.call('HSET', wf, 'state', 'done', 'ended', now_ms())
    if ttl then redis.call('PEXPIRE', wf, ttl) end
  end
end

local function cancel_waiting(wf)
  local cancelled = {}
  local fields = redis.call('HKEYS', wf)
  for _, field in ipairs(fields) do
    local jid = string.match(field, '^w:(.*)$')
    if jid then
      redis.call('HDEL', wf, field, 'n:' .. jid)
      redis.call('HSET', wf, 'st:' .. jid, 'cancelled')
      cancelled[#cancelled + 1] = jid
    end
  end
  return cancelled
end
