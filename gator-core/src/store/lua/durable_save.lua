#!lua
-- durable_save.lua: save a running durable job's state (its checkpoint, a step's result) by
-- rewriting its payload in its process's in-flight list, checked against the process's lease
-- on Redis's clock, in one atomic step: whatever puts the job back later (recovery, shutdown,
-- a retry) puts back the payload with the state. The job's flow units, kept under its payload
-- in the process's units hash, move to the new payload with it (one count of the entry: a
-- payload in flight twice keeps the other copy's under the old one). Idempotent: a save sent
-- again after a lost reply finds the new payload in flight and answers 1. Not allow-oom: the state
-- grows the payload, and at maxmemory the save fails (the job's attempt fails, and its retry,
-- which is allow-oom, keeps the last state saved).
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  ZSET  gator:{<queue>}:leases
-- KEYS[3]  HASH  gator:{<queue>}:units:<process id>
-- ARGV[1]  the process id
-- ARGV[2]  the payload as it is in flight now
-- ARGV[3]  the payload with the new state
-- Returns  1 if saved (or saved already), 0 if the job is no longer in flight here (recovered:
--          this run must stop), -1 if the process holds no live lease on the queue
local bad = wrong_type(KEYS[1], 'list') if bad then return bad end
local expiry = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not expiry or tonumber(expiry) <= now_ms() then
  return -1
end
local at = redis.call('LPOS', KEYS[1], ARGV[2])
if not at then
  if redis.call('LPOS', KEYS[1], ARGV[3]) then return 1 end
  return 0
end
redis.call('LSET', KEYS[1], at, ARGV[3])
-- One unit entry ("limit key\ncost\ncount") moves: a payload in flight twice here (pushed
-- twice by another producer) counts 2 under one entry, and only this copy was rewritten.
local units = redis.call('HGET', KEYS[3], ARGV[2])
if units then
  local lk, cost, count = string.match(units, '^(.*)\n(%d+)\n(%d+)$')
  if lk and tonumber(count) > 1 then
    redis.call('HSET', KEYS[3], ARGV[2], lk .. '\n' .. cost .. '\n' .. (tonumber(count) - 1))
  else
    redis.call('HDEL', KEYS[3], ARGV[2])
  end
  if lk then
    local there = redis.call('HGET', KEYS[3], ARGV[3])
    local had = there and tonumber(string.match(there, '\n(%d+)$')) or 0
    units = lk .. '\n' .. cost .. '\n' .. (had + 1)
  end
  redis.call('HSET', KEYS[3], ARGV[3], units)
end
return 1
