#!lua flags=allow-oom
-- finished_trim.lua: keep the status records of at most ARGV[1] finished jobs of a queue (done,
-- cancelled, discarded), none older than ARGV[3] ms. The finished list holds their jids newest
-- first (kept_finished, set_done, and the plain success's MULTI); this takes up to ARGV[2] jids
-- off its old end: while the list is longer than the count, and while its oldest jid's record
-- is older than the retention or gone (a key record expires by itself; a `done` record in a
-- bucket does not, so this is what ends it). A taken jid's record is deleted if it still says
-- finished (a recovered copy of a job may be running again: its record is left alone).
-- The jids are read and deleted in bulk: one MGET of their keys, one HMGET and one HDEL per
-- bucket, one DEL: a call from Lua costs Redis more than the command it makes, and three calls
-- per jid cost six times what the deletes themselves did.
-- allow-oom: it only removes, so it must run when Redis is full.
--
-- KEYS[1]  LIST  gator:{<queue>}:finished
-- (and each taken job's record and bucket, of the same queue's prefix: same slot)
-- ARGV[1]  how many to keep
-- ARGV[2]  the most to remove in this call (at most a few thousand: unpack's limit)
-- ARGV[3]  the retention (ms): a finished record older than this goes, whatever the count
-- Returns  how many jids it took off the list
local bad = wrong_type(KEYS[1], 'list') if bad then return bad end
local keep, most, retention = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local prefix = queue_prefix(KEYS[1])
local cutoff = now_ms() - retention
-- How many jids the age test reads at a time from the list's old end.
local PEEK = 100
-- Every Lua string op costs Redis ~0.3 µs here (each new string is hashed and interned), about
-- what the command it feeds costs: this reads each jid with as few as it can.
local job_keys = qkey(prefix, 'job', '')

-- What each of `jids`' record is: `found.where[i]` ('key' or 'bucket', nil if neither holds
-- one) and `found.record[i]`, the key's record first, else the bucket's field; with the key,
-- the bucket and the field each jid names, for `forget`. A `queued` key beside a finished
-- record in the bucket is an earlier release's, left stale (`found.stale[i]`): the bucket's
-- record counts, and both go.
local function records_of(jids)
  local found = { where = {}, record = {}, key = {}, bucket = {}, field = {}, stale = {} }
  local keys, buckets, fields = found.key, found.bucket, found.field
  -- The 16 jids of a bucket share their first 34 bytes: a jid whose head was seen needs only
  -- its last two checked, not the whole pattern bucket_of matches (1.4 µs a jid).
  local heads = {}
  for i = 1, #jids do
    local jid = jids[i]
    keys[i] = job_keys .. jid
    local head = string.sub(jid, 1, 34)
    local bucket = heads[head]
    if bucket and string.find(jid, '^%x%x$', 35) then
      buckets[i], fields[i] = bucket, string.sub(jid, 35, 36)
    else
      buckets[i], fields[i] = bucket_of(prefix, jid)
      heads[head] = buckets[i]
    end
  end
  local values = redis.call('MGET', unpack(keys))
  -- The jids without a key record, by bucket, in order of first appearance.
  local asked, order = {}, {}
  for i = 1, #jids do
    -- A `queued` key is an earlier release's (its `queued` records were keys); if the
    -- bucket holds a finished record, a success of this release left the key: stale.
    if values[i] and not (values[i] == 'queued' and buckets[i]) then
      found.where[i], found.record[i] = 'key', values[i]
    elseif buckets[i] then
      local bucket = buckets[i]
      if not asked[bucket] then asked[bucket] = {} order[#order + 1] = bucket end
      local ask = asked[bucket]
      ask[#ask + 1] = i
    end
  end
  for _, bucket in ipairs(order) do
    local ask, names = asked[bucket], {}
    for n = 1, #ask do names[n] = fields[ask[n]] end
    local records = redis.call('HMGET', bucket, unpack(names))
    for n = 1, #ask do
      -- '' is a queued mark: no record of this job's finish.
      local record, i = records[n], ask[n]
      if record and record ~= '' then
        found.where[i], found.record[i], found.stale[i] = 'bucket', record, values[i] ~= false
      elseif values[i] then
        found.where[i], found.record[i] = 'key', values[i]
      end
    end
  end
  return found
end

-- Deletes the records of `found`'s jids up to `last` (already off the list) that still say
-- finished.
local function forget(found, last)
  local keys, fields, order = {}, {}, {}
  for i = 1, last do
    local where = found.where[i]
    -- `done ` first, by position: no capture (a new string) for nearly every record.
    local record = where and found.record[i]
    if record and (string.find(record, '^done ') or FINISHED[string.match(record, '^(%a+)')]) then
      if where == 'key' then
        keys[#keys + 1] = found.key[i]
      else
        local bucket = found.bucket[i]
        -- The stale `queued` key beside it goes too.
        if found.stale[i] then keys[#keys + 1] = found.key[i] end
        if not fields[bucket] then fields[bucket] = {} order[#order + 1] = bucket end
        local names = fields[bucket]
        names[#names + 1] = found.field[i]
      end
    end
  end
  if #keys > 0 then redis.call('DEL', unpack(keys)) end
  for _, bucket in ipairs(order) do redis.call('HDEL', bucket, unpack(fields[bucket])) end
end

-- Past the count: the oldest go, whatever their age.
local taken = 0
local over = redis.call('LLEN', KEYS[1]) - keep
if over > 0 then
  local jids = redis.call('RPOP', KEYS[1], math.min(over, most))
  forget(records_of(jids), #jids)
  taken = #jids
end
-- Then, from the oldest, those whose record is a bucket's `done` past the retention, or gone:
-- read PEEK at a time, up to the first that is neither.
while taken < most do
  local peek = redis.call('LRANGE', KEYS[1], -math.min(PEEK, most - taken), -1)
  if #peek == 0 then break end
  -- Oldest first, as they come off the list.
  local jids = {}
  for i = #peek, 1, -1 do jids[#jids + 1] = peek[i] end
  local found = records_of(jids)
  local due = 0
  for i = 1, #jids do
    local where, record = found.where[i], found.record[i]
    local at = where == 'bucket' and tonumber(string.match(record, '^%a+ (%d+)'))
    if where and not (at and at < cutoff) then break end
    due = i
  end
  if due > 0 then
    redis.call('RPOP', KEYS[1], due)
    forget(found, due)
    taken = taken + due
  end
  if due < #jids then break end
end
return taken
