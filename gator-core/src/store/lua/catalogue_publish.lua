#!lua flags=allow-oom
-- catalogue_publish.lua: a worker publishes the jobs it runs in the job catalogue, and renews
-- its leases on them, on Redis time. One writer per job name at a time: the definition is
-- written only by the holder of the name's writer lease (taken when it is free or has ended);
-- any other worker only renews its runner lease, and hears back when its definition differs.
-- allow-oom: renewals rewrite small values, and a fleet at maxmemory must still say what it
-- runs (a new name is refused once the catalogue holds ARGV[4] names).
--
-- KEYS[1]  HASH  gator:{catalogue}:jobs     (job name -> definition, JSON)
-- KEYS[2]  HASH  gator:{catalogue}:writers  (job name -> '<worker> <lease end, ms>')
-- KEYS[3]  the runners' prefix gator:{catalogue}:runners: (HASH per job: worker ->
--          '<lease end, ms> <queues, comma-separated>')
-- ARGV[1]  the worker's id
-- ARGV[2]  how long the leases last unless renewed, ms
-- ARGV[3]  the queues the worker serves, comma-separated
-- ARGV[4]  the most names the catalogue holds
-- ARGV[5..] pairs: a job's name, its definition
-- Returns  { differs, full }: 'name holder' for each name whose definition another worker's
--          lease holds and that differs from ours; the names refused because the catalogue is
--          full; a WRONGTYPE error naming the key if one of them holds another type, before
--          anything is written (store::broken)
local bad = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'hash')
for i = 5, #ARGV, 2 do bad = bad or wrong_type(KEYS[3] .. ARGV[i], 'hash') end
if bad then return bad end
local now = now_ms()
local me, lease, queues, max = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local differs, full = {}, {}
for i = 5, #ARGV, 2 do
  local name, def = ARGV[i], ARGV[i + 1]
  local writer = redis.call('HGET', KEYS[2], name)
  local holder, ends = nil, 0
  if writer then
    holder, ends = string.match(writer, '^(%S+) (%d+)$')
    ends = tonumber(ends) or 0
  end
  local known = redis.call('HEXISTS', KEYS[1], name) == 1
  if not known and redis.call('HLEN', KEYS[1]) >= max then
    table.insert(full, name)
  else
    if holder == nil or holder == me or ends <= now then
      redis.call('HSET', KEYS[1], name, def)
      redis.call('HSET', KEYS[2], name, me .. ' ' .. (now + lease))
    elseif redis.call('HGET', KEYS[1], name) ~= def then
      table.insert(differs, name .. ' ' .. holder)
    end
    local runners = KEYS[3] .. name
    redis.call('HSET', runners, me, (now + lease) .. ' ' .. queues)
    local all = redis.call('HGETALL', runners)
    for j = 1, #all, 2 do
      local until_ms = tonumber(string.match(all[j + 1], '^(%d+)')) or 0
      if until_ms <= now then redis.call('HDEL', runners, all[j]) end
    end
  end
end
return { differs, full }
