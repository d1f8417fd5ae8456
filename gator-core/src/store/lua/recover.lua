#!lua flags=allow-oom
-- recover.lua: for one queue, put the in-flight jobs of every process whose lease expired (on
-- Redis time) back at the head of the queue, oldest fetch first (on a controlled queue: parked
-- first in line, with the units the process held released, see flow_lib.lua). Checking the lease and moving
-- the jobs are one atomic step, so a live process is never recovered, and two workers
-- recovering at once move each job once.
--
-- An expired entry stays in the lease set until it has been expired for ARGV[2] ms, so a list
-- a paused process fills after its lease ran out (a blocking fetch that lands late) is still
-- found by a later pass; then, its list being empty, it is forgotten.
--
-- With ARGV[4], the other processes of that prefix (ids `<prefix>:<nonce>`) are recovered
-- whatever their lease: a worker restarted under the id an operator gave it knows its
-- predecessor is gone, and so does one whose host, pid, boot and PID namespace an earlier
-- process had (the pid is its own now: gator_worker::identity).
--
-- The in-flight keys are the prefix ARGV[1] followed by a process id from the lease set: the
-- same hash tag as KEYS, so the same slot.
-- allow-oom: it only moves jobs.
--
-- KEYS[1]  ZSET  gator:{<queue>}:leases
-- KEYS[2]  LIST  gator:{<queue>}:queue
-- ARGV[1]  the in-flight key prefix, gator:{<queue>}:inflight:
-- ARGV[2]  how long (ms) an expired entry is kept before it is forgotten
-- ARGV[3]  the calling process's id, never recovered
-- ARGV[4]  a prefix (a worker id, or host:pid:lineage) whose other processes to take over,
--          or '' for none
-- ARGV[5]  with ARGV[4], the prefix of the ids of the calling OS process's workers
--          (`<ARGV[4]>:<process mark>`), never taken over: an app may run several workers in
--          one process, and they are alive whatever their pid says
-- Returns  { next, now, id1, n1, id2, n2, ... }: next is when the earliest live lease of another
--          process expires (ms, -1 if none), now is Redis time (ms), then each process whose
--          jobs were put back with how many
-- @flow_lib
local now = now_ms()
local forget_before = now - tonumber(ARGV[2])
local result = { -1, now }

local prefix = queue_prefix(KEYS[2])
local controlled = is_controlled(prefix)

local function put_back(id)
  local key = ARGV[1] .. id
  local moved = 0
  if controlled then
    free_all_units(prefix, id)
    moved = park_all_first(prefix, key, now)
  else
    while true do
      local job = redis.call('LMOVE', key, KEYS[2], 'RIGHT', 'LEFT')
      if not job then break end
      set_status(prefix, job, 'queued')
      moved = moved + 1
    end
  end
  if moved > 0 then
    result[#result + 1] = id
    result[#result + 1] = moved
  end
end

local expired = redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'WITHSCORES')
for i = 1, #expired, 2 do
  local id = expired[i]
  if id ~= ARGV[3] then
    put_back(id)
    if tonumber(expired[i + 1]) < forget_before then
      redis.call('ZREM', KEYS[1], id)
    end
  end
end

if ARGV[4] ~= '' then
  local prefix = ARGV[4] .. ':'
  for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
    if id ~= ARGV[3] and string.sub(id, 1, #prefix) == prefix
        and not string.find(id, ':', #prefix + 1, true)
        and string.sub(id, 1, #ARGV[5]) ~= ARGV[5] then
      put_back(id)
      redis.call('ZREM', KEYS[1], id)
    end
  end
end

local live = redis.call('ZRANGE', KEYS[1], '(' .. now, '+inf', 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, 2)
for i = 1, #live, 2 do
  if live[i] ~= ARGV[3] then
    result[1] = tonumber(live[i + 1])
    break
  end
end
return result
