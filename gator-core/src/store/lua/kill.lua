#!lua
-- kill.lua: add a job to its queue's dead set and trim the set by age and size in the same
-- step, so the cap holds however many workers kill jobs at once.
--
-- KEYS[1]  ZSET  gator:{<queue>}:dead (score = time of death, ms)
-- ARGV[1]  now, ms since the Unix epoch
-- ARGV[2]  the payload (JSON, or the raw text of a payload that could not be parsed)
-- ARGV[3]  the most entries to keep; the oldest go first
-- ARGV[4]  entries that died before this time (ms) are removed
-- Returns  the number of entries left in the dead set
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[4])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[3]) + 1))
return redis.call('ZCARD', KEYS[1])
