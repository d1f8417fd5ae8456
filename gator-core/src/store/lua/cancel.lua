#!lua flags=allow-oom
-- cancel.lua: cancel a job that has not finished, in the slot of its queue (Client::cancel).
-- A job waiting in the queue's list or in its scheduled or retry set is removed, if it is
-- still there, and recorded cancelled in the same step. A job that is running, or parked on a
-- controlled queue, cannot be removed from here: its jid goes in the queue's cancelling set,
-- which every worker reads each second; the worker running it (or the next to fetch it) stops
-- it and records it cancelled (cancelled.lua).
-- A unique job removed here releases its lock (unique_lib.lua) in the same step; a marked one
-- releases it when its worker settles it.
-- A job removed here loses its side key (payload::aside), if it has one, in the same step.
-- allow-oom: it only removes, and a Redis at maxmemory must still let a job be cancelled.
--
-- KEYS[1]  LIST or ZSET  where the job waits: gator:{<queue>}:queue, :scheduled or :retry
--          (for `mark`, the queue's list)
-- KEYS[2]  SET     gator:{<queue>}:cancelling
-- KEYS[3]  STRING  gator:{<queue>}:job:<jid>, its status record
-- (and the job's queued mark and the queue's finished list, which the prelude's marked(),
-- unmark() and kept_finished() derive from KEYS[3]'s prefix and the jid: same slot)
-- ARGV[1]  `list`, `zset` (remove the payload from KEYS[1]) or `mark` (add the jid to KEYS[2])
-- ARGV[2]  the payload exactly as stored (`list`, `zset`), or the jid (`mark`)
-- ARGV[3]  how long (ms) the cancelled record is kept
-- ARGV[4]  (`zset`, optional) a scheduled job's due time (ms) when its entry may wait in its
--          minute's list (later_lib.lua): removed from there if the set does not hold it
--          (`mark`) the status the record must still have: `running`, `queued`, or
--          `awaiting` or `suspended` (a durable job's wait for a reply; its wait already ended
--          by reply::end_wait: only recorded cancelled)
-- ARGV[5]  (`mark`, `awaiting`, `suspended`) a workflow step's report of its end, for KEYS[4], or ''
-- KEYS[4]  LIST  gator:{<queue>}:outbox (`mark` only)
-- Returns  1 if cancelled (or marked); 0 if the job was no longer there, or no longer in that
--          state (it moved meanwhile: read its status again)
-- @unique_lib
-- @later_lib
local mode = ARGV[1]
if mode == 'list' then
  local bad = wrong_type(KEYS[1], 'list') if bad then return bad end
  if redis.call('LREM', KEYS[1], 1, ARGV[2]) == 0 then return 0 end
elseif mode == 'zset' then
  local bad = wrong_type(KEYS[1], 'zset') if bad then return bad end
  if redis.call('ZREM', KEYS[1], ARGV[2]) == 0
      and not (ARGV[4] and later_remove(queue_prefix(KEYS[3]), ARGV[4], ARGV[2]) == 1) then
    return 0
  end
else
  local bad = wrong_type(KEYS[2], 'set') if bad then return bad end
  local prefix = queue_prefix(KEYS[3])
  local record = redis.call('GET', KEYS[3])
  local state = record and string.match(record, '^(%S+)')
  if not record and marked(prefix, ARGV[2]) then state = 'queued' end
  if state ~= ARGV[4] then return 0 end
  if ARGV[4] == 'awaiting' or ARGV[4] == 'suspended' then
    redis.call('SET', KEYS[3], 'cancelled ' .. now_ms(), 'PX', tonumber(ARGV[3]))
    kept_finished(prefix, ARGV[2], 'cancelled')
    if ARGV[5] and ARGV[5] ~= '' then redis.call('RPUSH', KEYS[4], ARGV[5]) end
    return 1
  end
  redis.call('SADD', KEYS[2], ARGV[2])
  if ARGV[4] == 'queued' then
    -- Parked: it will not start; the worker that fetches it settles it.
    unmark(prefix, ARGV[2])
    redis.call('SET', KEYS[3], 'cancelled ' .. now_ms(), 'PX', tonumber(ARGV[3]))
    kept_finished(prefix, ARGV[2], 'cancelled')
  end
  return 1
end
local prefix = queue_prefix(KEYS[3])
unique_release(prefix, ARGV[2])
local jid = jid_of(ARGV[2])
if jid then
  unmark(prefix, jid)
  kept_finished(prefix, jid, 'cancelled')
  redis.call('DEL', qkey(prefix, 'payload', jid))
end
redis.call('SET', KEYS[3], 'cancelled ' .. now_ms(), 'PX', tonumber(ARGV[3]))
return 1
