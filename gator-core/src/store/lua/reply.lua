#!lua flags=allow-oom
-- reply.lua: a reply to a correlation key (Client::reply), in the replies' slot. A job waiting
-- for it gets it: its wait goes, and a completion goes to the replies' outbox. The first
-- reply wins: one that comes after another for the same key within the lookback window is
-- dropped and counted. A reply nobody waits for yet is kept for the lookback window, for the
-- wait that registers later (reply_wait.lua).
-- allow-oom: a reply is accepted work.
--
-- KEYS[1]  HASH  gator:{replies}:waits
-- KEYS[2]  ZSET  gator:{replies}:deadlines
-- KEYS[3]  STRING  gator:{replies}:early:<key>
-- KEYS[4]  STRING  gator:{replies}:seen:<key>
-- KEYS[5]  LIST  gator:{replies}:outbox
-- KEYS[6]  HASH  gator:{replies}:stats
-- ARGV[1]  the correlation key
-- ARGV[2]  the reply (JSON)
-- ARGV[3]  the lookback window, ms
-- Returns  `delivered`, `kept` or `duplicate`; a WRONGTYPE error naming the key if one of
--          the replies' keys holds another type, before anything is written (store::broken)
local bad = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'zset')
  or wrong_type(KEYS[5], 'list') or wrong_type(KEYS[6], 'hash')
if bad then return bad end
local key = ARGV[1]
local waiter = redis.call('HGET', KEYS[1], key)
if waiter then
  redis.call('HDEL', KEYS[1], key)
  redis.call('ZREM', KEYS[2], key)
  local ok, doc = pcall(cjson.decode, waiter)
  local jid = ok and type(doc) == 'table' and doc['jid'] or '?'
  redis.call('SET', KEYS[4], jid, 'PX', tonumber(ARGV[3]))
  redis.call('RPUSH', KEYS[5], '{"kind":"done","waiter":' .. waiter .. ',"reply":' .. ARGV[2] .. '}')
  redis.call('HINCRBY', KEYS[6], 'delivered', 1)
  return 'delivered'
end
if redis.call('EXISTS', KEYS[4]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('HINCRBY', KEYS[6], 'duplicates', 1)
  return 'duplicate'
end
redis.call('SET', KEYS[3], ARGV[2], 'PX', tonumber(ARGV[3]))
redis.call('HINCRBY', KEYS[6], 'kept', 1)
return 'kept'
