#!lua flags=allow-oom
-- finished_trim.lua: keep the status records of at most ARGV[1] finished jobs of a queue (done,
-- cancelled, discarded), none older than ARGV[3] ms. The finished list holds their jids newest
-- first (kept_finished, set_done, and the plain success's MULTI); this takes up to ARGV[2] jids
-- off its old end: while the list is longer than the count, and while its oldest jid's record
-- is older than the retention or gone (a key record expires by itself; a `done` record in a
-- bucket does not, so this is what ends it). A taken jid's record is deleted if it still says
-- finished (a recovered copy of a job may be running again: its record is left alone).
-- allow-oom: it only removes, so it must run when Redis is full.
--
-- KEYS[1]  LIST  gator:{<queue>}:finished
-- (and each taken job's record and bucket, of the same queue's prefix: same slot)
-- ARGV[1]  how many to keep
-- ARGV[2]  the most to remove in this call
-- ARGV[3]  the retention (ms): a finished record older than this goes, whatever the count
-- Returns  how many jids it took off the list
local bad = wrong_type(KEYS[1], 'list') if bad then return bad end
local keep, most, retention = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local prefix = queue_prefix(KEYS[1])
local cutoff = now_ms() - retention

-- Where `jid`'s record is (`key` or `bucket`, nil if neither holds one) and the record.
local function record_of(jid)
  local key = qkey(prefix, 'job', jid)
  local record = redis.call('GET', key)
  if record then return 'key', record end
  record = bucket_record(prefix, jid)
  if record and record ~= '' then return 'bucket', record end
  return nil, record
end

-- Takes `jid` (already off the list): deletes its record if it still says finished.
local function forget(jid, where, record)
  local state = where and string.match(record, '^(%a+)')
  if not (state and FINISHED[state]) then return end
  if where == 'key' then
    redis.call('DEL', qkey(prefix, 'job', jid))
  else
    unmark(prefix, jid)
  end
end

-- Past the count: the oldest go, whatever their age.
local taken = 0
local over = redis.call('LLEN', KEYS[1]) - keep
if over > 0 then
  local jids = redis.call('RPOP', KEYS[1], math.min(over, most))
  for _, jid in ipairs(jids) do forget(jid, record_of(jid)) end
  taken = #jids
end
-- Then, while the oldest is a bucket's `done` record past the retention, or has no record.
while taken < most do
  local jid = redis.call('LINDEX', KEYS[1], -1)
  if not jid then break end
  local where, record = record_of(jid)
  local at = where == 'bucket' and tonumber(string.match(record, '^%a+ (%d+)'))
  if where and not (at and at < cutoff) then break end
  redis.call('RPOP', KEYS[1])
  taken = taken + 1
  forget(jid, where, record)
end
return taken
