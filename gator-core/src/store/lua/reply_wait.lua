#!lua flags=allow-oom
-- reply_wait.lua: register a job's wait for the reply to its correlation key, in the replies'
-- slot. A reply that came first (within the lookback window) is matched at once: a completion
-- goes to the replies' outbox. Idempotent by jid: a wait registered or matched before is not
-- registered again. A key another job already waits for fails this wait at once.
-- allow-oom: it only moves a waiting job.
--
-- KEYS[1]  HASH  gator:{replies}:waits
-- KEYS[2]  ZSET  gator:{replies}:deadlines
-- KEYS[3]  STRING  gator:{replies}:early:<key>
-- KEYS[4]  STRING  gator:{replies}:seen:<key>
-- KEYS[5]  LIST  gator:{replies}:outbox
-- KEYS[6]  HASH  gator:{replies}:stats
-- ARGV[1]  the correlation key
-- ARGV[2]  the job's jid
-- ARGV[3]  its wait record (JSON)
-- ARGV[4]  the timeout, ms
-- ARGV[5]  the lookback window, ms
-- Returns  `waiting`, `matched` (a reply was there: completed), or `conflict` (another job
--          waits for the key: this wait failed); a WRONGTYPE error naming the key if one of
--          the replies' keys holds another type, before anything is written (store::broken)
local bad = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'zset')
  or wrong_type(KEYS[5], 'list') or wrong_type(KEYS[6], 'hash')
if bad then return bad end
local key, jid = ARGV[1], ARGV[2]
local existing = redis.call('HGET', KEYS[1], key)
if existing then
  local ok, doc = pcall(cjson.decode, existing)
  if ok and type(doc) == 'table' and doc['jid'] == jid then return 'waiting' end
  redis.call('RPUSH', KEYS[5], '{"kind":"fail","error":' ..
    cjson.encode('another job already waits for the reply to ' .. key) .. ',"waiter":' .. ARGV[3] .. '}')
  return 'conflict'
end
if redis.call('GET', KEYS[4]) == jid then
  return 'matched'
end
local early = redis.call('GET', KEYS[3])
if early then
  redis.call('DEL', KEYS[3])
  redis.call('SET', KEYS[4], jid, 'PX', tonumber(ARGV[5]))
  redis.call('RPUSH', KEYS[5], '{"kind":"done","waiter":' .. ARGV[3] .. ',"reply":' .. early .. '}')
  redis.call('HINCRBY', KEYS[6], 'delivered', 1)
  return 'matched'
end
redis.call('HSET', KEYS[1], key, ARGV[3])
redis.call('ZADD', KEYS[2], now_ms() + tonumber(ARGV[4]), key)
return 'waiting'
