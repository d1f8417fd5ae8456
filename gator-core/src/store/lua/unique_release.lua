#!lua flags=allow-oom
-- unique_release.lua: release the lock of a job with `unique.until = "start"` as it starts
-- (the worker calls it before running the job), if the lock still names this job: a lock
-- taken since by a later job (after a TTL expiry, or a debounce's new job) is left alone.
-- (Successes, deaths, discards and cancels release the lock in their own settle scripts.)
-- allow-oom: it only deletes.
--
-- KEYS[1]  LIST  gator:{<queue>}:queue (names the queue's slot; not touched)
-- ARGV[1]  the payload exactly as fetched
-- Returns  1 if the lock was released, 0 if it named another job or was gone
-- @unique_lib
return unique_release(queue_prefix(KEYS[1]), ARGV[1])
