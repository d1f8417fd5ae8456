#!lua flags=allow-oom
-- reply_done.lua: a waiting job got its reply: record it done, with the reply as its result,
-- and its chain's or workflow's hand-off in its queue's outbox, in the slot of its queue
-- (store::reply::complete). Running it twice records the same thing, and a hand-off counted
-- twice is counted once where it lands.
-- A unique job's lock (unique_lib.lua) is released in the same step: it succeeded.
-- allow-oom: it records an outcome.
--
-- KEYS[1]  STRING  gator:{<queue>}:job:<jid>
-- KEYS[2]  LIST    gator:{<queue>}:outbox
-- (and gator:{<queue>}:finished, which kept_finished derives from KEYS[1]'s prefix: same slot)
-- ARGV[1]  `<attempts> <reply JSON>`: the record becomes `done <now> ` followed by this
-- ARGV[2]  how long (ms) the record is kept
-- ARGV[3]  the hand-off (a chain link or a workflow report), or ''
-- ARGV[4]  the waiting job's payload if it is unique (its lock is released), or '' (absent
--          from older clients)
-- Returns  1
-- @unique_lib
local bad = wrong_type(KEYS[2], 'list') if bad then return bad end
redis.call('SET', KEYS[1], 'done ' .. now_ms() .. ' ' .. ARGV[1], 'PX', tonumber(ARGV[2]))
kept_finished(queue_prefix(KEYS[1]), string.match(KEYS[1], ':job:(.*)$'), 'done')
if ARGV[3] ~= '' then
  redis.call('RPUSH', KEYS[2], ARGV[3])
end
if ARGV[4] and ARGV[4] ~= '' then
  unique_release(queue_prefix(KEYS[1]), ARGV[4])
end
return 1
