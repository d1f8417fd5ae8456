#!lua flags=allow-oom
-- fetch_except.lua: fetch.lua for a process that does not run some of a queue's jobs, which
-- other live workers run (the job catalogue says so): moves up to ARGV[1] jobs from the head
-- of the queue to the tail of the process's in-flight list, passing over the jobs named in
-- ARGV[4..]. Those stay where they are, in their order, for the workers that run them: they
-- are never parked, and a worker that runs them takes them as it takes any job.
--
-- It looks at the first ARGV[3] jobs only, so one call costs a bounded scan whatever the
-- queue's length. A name is read from the start of a payload Gator wrote ({"jid":..,"job":..),
-- else decoded; a payload that does not decode is taken (the worker dead-letters it).
-- allow-oom: it only moves jobs, and workers must keep draining a Redis at maxmemory.
--
-- KEYS[1]  LIST  gator:{<queue>}:queue
-- KEYS[2]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[3]  ZSET  gator:{<queue>}:leases
-- ARGV[1]  the most jobs to move
-- ARGV[2]  the process id
-- ARGV[3]  how many jobs from the head to look at
-- ARGV[4..] the names of the jobs to pass over
-- Returns  as fetch.lua: the jobs moved, oldest first (an empty list if none may be taken), or
--          -1 if the process holds no live lease on the queue, or -2 if the queue is controlled
local bad = wrong_type(KEYS[2], 'list') if bad then return bad end
if redis.call('EXISTS', qkey(queue_prefix(KEYS[1]), 'flow')) == 1 then
  return -2
end
local now = now_ms()
local expiry = redis.call('ZSCORE', KEYS[3], ARGV[2])
if not expiry or tonumber(expiry) <= now then
  return -1
end
local passed = {}
for i = 4, #ARGV do passed[ARGV[i]] = true end
local function name_of(payload)
  local name = string.match(payload, '^{"jid":"[^"\\]*","job":"([^"\\]*)"')
  if name then return name end
  local ok, doc = pcall(cjson.decode, payload)
  if ok and type(doc) == 'table' and type(doc['job']) == 'string' then return doc['job'] end
end
local want = tonumber(ARGV[1])
local jobs = {}
for _, job in ipairs(redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[3]) - 1)) do
  if not passed[name_of(job)] then
    -- The first equal payload from the head is this one: any before it had the same name.
    redis.call('LREM', KEYS[1], 1, job)
    jobs[#jobs + 1] = job
    if #jobs >= want then break end
  end
end
if #jobs > 0 then
  redis.call('RPUSH', KEYS[2], unpack(jobs))
end
return jobs
