#!lua flags=allow-oom
-- catalogue_read.lua: what the job catalogue knows of some jobs, judged on Redis time: each
-- one's definition if a worker renewed it in the last ARGV[1] ms (known), its writer and lease
-- end, and its live runners with the queues they serve. With no name, every job, and the names
-- nobody renewed for ARGV[1] ms are forgotten (the catalogue stays bounded by the live fleet).
-- allow-oom: it reads, and only removes.
--
-- KEYS[1]  HASH  gator:{catalogue}:jobs
-- KEYS[2]  HASH  gator:{catalogue}:writers
-- KEYS[3]  the runners' prefix gator:{catalogue}:runners:
-- ARGV[1]  how long a name stays known after its writer lease ended, ms
-- ARGV[2..] the names to read; none: all
-- Returns  { now, entries }: an entry is { name, definition, writer, lease end,
--          { worker, '<lease end> <queues>', ... } }, for known names only; a WRONGTYPE error
--          naming the key if one of them holds another type (store::broken)
local bad = wrong_type(KEYS[1], 'hash') or wrong_type(KEYS[2], 'hash')
if bad then return bad end
local now = now_ms()
local recent = tonumber(ARGV[1])
local names = {}
if #ARGV >= 2 then
  for i = 2, #ARGV do table.insert(names, ARGV[i]) end
else
  names = redis.call('HKEYS', KEYS[1])
end
local entries = {}
for _, name in ipairs(names) do
  local def = redis.call('HGET', KEYS[1], name)
  local writer = redis.call('HGET', KEYS[2], name) or ''
  local holder, ends = string.match(writer, '^(%S+) (%d+)$')
  ends = tonumber(ends) or 0
  if def and ends + recent > now then
    local runners = {}
    bad = wrong_type(KEYS[3] .. name, 'hash')
    if bad then return bad end
    local all = redis.call('HGETALL', KEYS[3] .. name)
    for j = 1, #all, 2 do
      if (tonumber(string.match(all[j + 1], '^(%d+)')) or 0) > now then
        table.insert(runners, all[j])
        table.insert(runners, all[j + 1])
      end
    end
    table.insert(entries, { name, def, holder or '', ends, runners })
  elseif #ARGV < 2 then
    redis.call('HDEL', KEYS[1], name)
    redis.call('HDEL', KEYS[2], name)
    redis.call('DEL', KEYS[3] .. name)
  end
end
return { now, entries }
