#!lua flags=allow-oom
-- finished_trim.lua: keep the status records of at most ARGV[1] finished jobs of a queue (done,
-- cancelled, discarded; each also expires after its retention). The finished list holds their
-- jids newest first (kept_finished, and the plain success's MULTI); this takes up to ARGV[2] of
-- the oldest past the count off it, and deletes their records if they still say finished (a
-- recovered copy of a job may be running again: its record is left alone).
-- allow-oom: it only removes, so it must run when Redis is full.
--
-- KEYS[1]  LIST  gator:{<queue>}:finished
-- ARGV[1]  how many to keep
-- ARGV[2]  the most to remove in this call
-- Returns  how many jids it took off the list
local bad = wrong_type(KEYS[1], 'list') if bad then return bad end
local over = redis.call('LLEN', KEYS[1]) - tonumber(ARGV[1])
if over <= 0 then return 0 end
local jids = redis.call('RPOP', KEYS[1], math.min(over, tonumber(ARGV[2])))
local prefix = queue_prefix(KEYS[1])
for _, jid in ipairs(jids) do
  local key = qkey(prefix, 'job', jid)
  local record = redis.call('GET', key)
  local state = record and string.match(record, '^(%a+)')
  if state == 'done' or state == 'cancelled' or state == 'discarded' then
    redis.call('DEL', key)
  end
end
return #jids
