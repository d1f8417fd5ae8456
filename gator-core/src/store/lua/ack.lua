#!lua flags=allow-oom
-- ack.lua: record that a chain step with a step after it (or a workflow step, whose report
-- goes the same way) succeeded: take it out of its
-- process's in-flight list and append the hand-off of the next step to this queue's outbox,
-- in one atomic step in this queue's slot. The next step may wait under another hash tag (on
-- another cluster node), so it is moved by store::chain::advance (chain_take.lua, then
-- chain_push.lua), idempotently; a crash in between leaves the record in the outbox, and the
-- next drain finishes the move. Nothing is written if the job was no longer in flight (it was
-- recovered as an orphan and is queued again, so that other copy settles it): a job leaves
-- the in-flight record exactly once. (A success that starts no chain step is a plain LREM:
-- see store::inflight::ack_and_take.)
-- A job that holds no units (its process holds none on this queue: a plain queue) is settled
-- before the flow library is defined.
-- A job with `unique` (unique_lib.lua) releases its lock here, in the same step: a unique job
-- whose lock lasts until its success settles through this script even without a hand-off
-- (ARGV[2] empty: store::unique::ack).
-- allow-oom: it only moves or removes jobs, and a Redis at maxmemory must still settle them.
--
-- KEYS[1]  LIST  gator:{<queue>}:inflight:<process id>
-- KEYS[2]  LIST  gator:{<queue>}:outbox
-- KEYS[3]  STRING  gator:{<queue>}:payload:<jid>, the job's side key: only for a job stored
--          aside (payload::aside), deleted with it; absent for any other
-- ARGV[1]  the payload exactly as fetched
-- ARGV[2]  the hand-off: the step's chain link as JSON ({id, list_queue, next_jid, next_queue}),
--          or a workflow step's report to its workflow (store::workflow::Report); '' for none
--          (a unique job's success that hands nothing off)
-- ARGV[3]  `<attempts> <result JSON>` (the result empty for none): its status record is
--          `done <now> ` and this
-- ARGV[4]  how long (ms) the status record is kept
-- Returns  0 if the job was not in flight; 1 if acked and the hand-off recorded
-- @unique_lib
local bad = wrong_type(KEYS[2], 'list') if bad then return bad end
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
if KEYS[3] then redis.call('DEL', KEYS[3]) end
if ARGV[2] ~= '' then
  redis.call('RPUSH', KEYS[2], ARGV[2])
end
local prefix, process = string.match(KEYS[1], '^(.-}:)inflight:(.*)$')
unique_release(prefix, ARGV[1])
set_status(prefix, ARGV[1], 'done ' .. now_ms() .. ' ' .. ARGV[3], tonumber(ARGV[4]))
if redis.call('EXISTS', qkey(prefix, 'units', process)) == 0 then
  return 1
end
-- @flow_lib
free_units(KEYS[1], ARGV[1])
return 1
