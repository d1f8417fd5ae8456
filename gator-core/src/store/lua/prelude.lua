-- prelude.lua: what every script starts with, inserted after its #!lua line when it is loaded
-- (store::scripts): Lua scripts cannot share code otherwise.
--
-- now_ms()               Redis's clock, ms since the Unix epoch: every time decision is taken
--                        on it, never on a worker's clock.
-- wrong_queue(key)       wrong_type(key, 'list'), a controlled queue's STRING marker allowed.
-- wrong_type(key, kind)  an error reply if `key` exists and is not of `kind`, else nil. Redis
--                        does not roll a script back when a command fails halfway, so a script
--                        that removes a job checks the keys it writes first, and fails before
--                        anything moved: `local bad = wrong_type(k, 'list') if bad then return bad end`.
-- queue_prefix(key)      `<ns>:{<queue>}:` of any key of the queue.
-- set_status(prefix, payload, value, ttl)
--                        writes the job's status record (`<prefix>job:<jid>`, a STRING:
--                        `queued`, `scheduled <due>`, `running <since> <attempt> <process>`,
--                        `retrying <due> <attempts> <error>`, `dead <at> <attempts> <error>`,
--                        `done <at> <attempts> <result>`),
--                        expiring after `ttl` ms if given. One SET per state change: the index
--                        `Client::status` reads. A payload without a jid has no record. The
--                        job's queued mark, if any, goes in the same step (unmark). A `done`
--                        record of a jid that names a bucket goes in the bucket instead
--                        (set_done): a field rewritten, not a key created; a `queued` one is
--                        the job's mark (set_queued), its key record deleted; a `scheduled`
--                        one goes there too: a key a job waiting for later costs ~190 bytes,
--                        a field ~14.
-- set_done(prefix, jid, value)
--                        a `done` record in field `ss` of the job's bucket
--                        (`<prefix>queued:<bucket>`, where its queued mark was), its key
--                        record (an earlier state's) deleted, its jid on the finished list,
--                        which store::finished trims by count and by age: a bucket's fields
--                        do not expire. False for a jid that names no bucket.
-- to_bucket(prefix, jid, value)   `value` in the job's bucket field and its key record deleted
--                        (set_done's, set_queued's and a `scheduled` record's write); false
--                        for a jid naming no bucket.
-- unmark(prefix, jid)    deletes the job's queued mark: field `ss` of the hash
--                        `<prefix>queued:<bucket>` for a jid `tttttttt-tttt-7aaa-vbbb-bbbbbbbbbbss`
--                        (bucket `aaa-vbbb-bbbbbbbbbb`; wire::jid), which the plain dispatch
--                        writes instead of a `queued` record. A no-op for any other jid.
-- kept_finished(prefix, jid, value)
--                        pushes the jid of a `done`, `cancelled` or `discarded` record on the
--                        queue's finished list (`<prefix>finished`), which bounds them by count;
--                        set_status does it for every record it writes with a ttl.
-- marked(prefix, jid)    whether the job's queued mark is set (its field holds ''): `queued`,
--                        if it has no record.
-- bucket_record(prefix, jid)   the record in the job's bucket field ('' for a queued mark,
--                        else a `done` or `scheduled` record),
--                        or nil; bucket_of(prefix, jid), that hash and field.
-- FINISHED               the states of a job that ended for good (done, cancelled, discarded).
-- set_statuses(prefix, payloads, value)   set_status for each of a batch, without expiry.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function wrong_type(key, kind)
  local found = redis.call('TYPE', key)['ok']
  if found ~= kind and found ~= 'none' then
    return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. found .. ', not a ' .. kind)
  end
end
-- wrong_type for a queue's list, which is a STRING (the `controlled` marker) once the queue is
-- under flow control (flow_lib.lua).
local function wrong_queue(key)
  if redis.call('TYPE', key)['ok'] == 'string' then return nil end
  return wrong_type(key, 'list')
end

local function queue_prefix(key)
  return string.match(key, '^(.-}:)')
end
-- A payload written by Gator starts with its jid; any other is decoded.
local function jid_of(payload)
  local jid = string.match(payload, '^{"jid":"([^"\\]*)"')
  if jid then return jid end
  local ok, doc = pcall(cjson.decode, payload)
  if ok and type(doc) == 'table' and type(doc['jid']) == 'string' then return doc['jid'] end
end
local UUID_V7 = '^%x%x%x%x%x%x%x%x%-%x%x%x%x%-7%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$'
-- The bucket hash and field of `jid` (wire::jid), or nil for a jid that names none.
local function bucket_of(prefix, jid)
  if not string.find(jid, UUID_V7) then return nil end
  return qkey(prefix, 'queued', string.sub(jid, 16, 34)), string.sub(jid, 35, 36)
end
local function unmark(prefix, jid)
  local bucket, field = bucket_of(prefix, jid)
  if bucket then redis.call('HDEL', bucket, field) end
end
local function bucket_record(prefix, jid)
  local bucket, field = bucket_of(prefix, jid)
  if not bucket then return nil end
  return redis.call('HGET', bucket, field) or nil
end
local function marked(prefix, jid)
  return bucket_record(prefix, jid) == ''
end
-- A record of a job that ended for good, and is kept for the retention: its jid goes on the
-- queue's finished list, which store::finished trims to a count.
-- The states of a job that ended for good: finished_trim.lua reads it too.
local FINISHED = { done = true, cancelled = true, discarded = true }
local function kept_finished(prefix, jid, value)
  if FINISHED[string.match(value, '^(%a+)')] then
    redis.call('LPUSH', qkey(prefix, 'finished'), jid)
  end
end
-- `value` in the job's bucket field, its key record (an earlier state's) deleted; false for a
-- jid that names no bucket.
local function to_bucket(prefix, jid, value)
  local bucket, field = bucket_of(prefix, jid)
  if not bucket then return false end
  redis.call('HSET', bucket, field, value)
  redis.call('DEL', qkey(prefix, 'job', jid))
  return true
end
local function set_done(prefix, jid, value)
  if not to_bucket(prefix, jid, value) then return false end
  kept_finished(prefix, jid, value)
  return true
end
-- A `queued` record of a jid that names a bucket is its mark, as the plain dispatch writes
-- it: no key a job, and a job in flight never has a key record its success must delete.
local function set_queued(prefix, jid)
  return to_bucket(prefix, jid, '')
end
local function set_status(prefix, payload, value, ttl)
  local jid = jid_of(payload)
  if not jid then return end
  if ttl and string.sub(value, 1, 5) == 'done ' and set_done(prefix, jid, value) then return end
  if not ttl and value == 'queued' and set_queued(prefix, jid) then return end
  if not ttl and string.sub(value, 1, 10) == 'scheduled ' and to_bucket(prefix, jid, value) then
    return
  end
  unmark(prefix, jid)
  if ttl then kept_finished(prefix, jid, value) end
  if ttl then
    redis.call('SET', qkey(prefix, 'job', jid), value, 'PX', ttl)
  else
    redis.call('SET', qkey(prefix, 'job', jid), value)
  end
end
local function set_statuses(prefix, payloads, value)
  for _, payload in ipairs(payloads) do set_status(prefix, payload, value) end
end
