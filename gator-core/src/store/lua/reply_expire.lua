#!lua flags=allow-oom
-- reply_expire.lua: end the waits whose time ran out (Redis time), in the replies' slot: each
-- wait goes, and a timeout completion goes to the replies' outbox (the job's retry policy then
-- applies, with a timeout error). Also ends the wait of job ARGV[3] for key ARGV[2] if given
-- (a cancel), returning 1 if it was there.
-- allow-oom: it only moves waiting jobs.
--
-- KEYS[1]  HASH  gator:{replies}:waits
-- KEYS[2]  ZSET  gator:{replies}:deadlines
-- KEYS[3]  LIST  gator:{replies}:outbox
-- KEYS[4]  HASH  gator:{replies}:stats
-- ARGV[1]  the most waits to end in one call
-- ARGV[2]  (a cancel) the correlation key, or ''
-- ARGV[3]  (a cancel) the jid that must be waiting for it
-- Returns  the number of waits that timed out; for a cancel, the wait record if the wait was
--          there, else nil; a WRONGTYPE error naming the key if one of the replies' keys
--          holds another type, before anything is written (store::broken)
local bad = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'zset')
  or wrong_type(KEYS[3], 'list') or wrong_type(KEYS[4], 'hash')
if bad then return bad end
if ARGV[2] ~= '' then
  local waiter = redis.call('HGET', KEYS[1], ARGV[2])
  if not waiter then return false end
  local ok, doc = pcall(cjson.decode, waiter)
  if not ok or type(doc) ~= 'table' or doc['jid'] ~= ARGV[3] then return false end
  redis.call('HDEL', KEYS[1], ARGV[2])
  redis.call('ZREM', KEYS[2], ARGV[2])
  return waiter
end
local due = redis.call('ZRANGE', KEYS[2], '-inf', now_ms(), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]))
for _, key in ipairs(due) do
  local waiter = redis.call('HGET', KEYS[1], key)
  redis.call('HDEL', KEYS[1], key)
  redis.call('ZREM', KEYS[2], key)
  if waiter then
    redis.call('RPUSH', KEYS[3], '{"kind":"timeout","waiter":' .. waiter .. '}')
    redis.call('HINCRBY', KEYS[4], 'timeouts', 1)
  end
end
return #due
