#!lua flags=allow-oom
-- catalogue_withdraw.lua: a worker that stops gives up its leases in the job catalogue at once,
-- instead of letting them run out: its runner leases go, and the writer leases it holds end now
-- (the definitions stay, known as recent). allow-oom: it only removes or shortens.
--
-- KEYS[1]  HASH  gator:{catalogue}:writers
-- KEYS[2]  the runners' prefix gator:{catalogue}:runners:
-- ARGV[1]  the worker's id
-- ARGV[2..] the job names it published
-- Returns  how many runner leases it gave up; a WRONGTYPE error naming the key if one of them
--          holds another type, before anything is written (store::broken)
local bad = wrong_type(KEYS[1], 'hash')
for i = 2, #ARGV do bad = bad or wrong_type(KEYS[2] .. ARGV[i], 'hash') end
if bad then return bad end
local now = now_ms()
local me, given = ARGV[1], 0
for i = 2, #ARGV do
  local name = ARGV[i]
  given = given + redis.call('HDEL', KEYS[2] .. name, me)
  local writer = redis.call('HGET', KEYS[1], name)
  if writer and string.match(writer, '^(%S+) ') == me then
    redis.call('HSET', KEYS[1], name, me .. ' ' .. now)
  end
end
return given
