-- unique_lib.lua: the locks of unique jobs (gator_core::unique), inserted where a script says
-- `-- @unique_lib`: only the scripts that take or release a lock pay for defining it.
--
-- A payload's `unique` field is {key, until, ttl, debounce?}. Its lock is the STRING
-- `<prefix>unique:<sha1 hex of key>` (one per queue: the queue's hash tag, so it lives in the
-- slot of every script that touches the job). Hashing bounds the key's length whatever the
-- arguments are, and any language can compute it. The lock holds the holder's jid, or, for a
-- debounced job, its pending payload (which starts with its jid), so a later dispatch can find
-- it in the scheduled set and replace it.
--
-- unique_of(payload)          its `unique` table and jid, or nil (one string.find for a payload
--                             without one)
-- unique_lock(prefix, key)    the lock's key name
-- lock_holder(value)          the jid a lock's value names
-- unique_release(prefix, payload)
--                             deletes the payload's lock if it still names this job (a later
--                             job's lock is never touched); returns 1 if it did
local function unique_of(payload)
  if not string.find(payload, '"unique"', 1, true) then return nil end
  local ok, doc = pcall(cjson.decode, payload)
  if not ok or type(doc) ~= 'table' or type(doc['unique']) ~= 'table'
      or type(doc['unique']['key']) ~= 'string' or type(doc['jid']) ~= 'string' then
    return nil
  end
  return doc['unique'], doc['jid']
end
local function unique_lock(prefix, key)
  return qkey(prefix, 'unique', redis.sha1hex(key))
end
local function lock_holder(value)
  if string.sub(value, 1, 1) == '{' then return jid_of(value) end
  return value
end
local function unique_release(prefix, payload)
  local unique, jid = unique_of(payload)
  if not unique then return 0 end
  local lock = unique_lock(prefix, unique['key'])
  local value = redis.call('GET', lock)
  if value and lock_holder(value) == jid then
    redis.call('DEL', lock)
    return 1
  end
  return 0
end
