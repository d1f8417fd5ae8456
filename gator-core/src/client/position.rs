//! Where a queued job stands: [`Client::position`]. Its place in its queue's list comes from
//! `store::position` (a binary search by jid: log2(n) + 1 probes, bounded at any length, and
//! nothing written on dispatch or fetch; a parked job by the place its status record names),
//! its expected start from the queue's processed counts of the last minutes (`store::stats`).

use super::Client;
use crate::error::Result;
use crate::status::{ExpectedStart, JobStatus, ParkedPlace, Position};
use crate::store;
use crate::store::position::{Found, ParkedAt};
use std::time::{Duration, UNIX_EPOCH};

/// The minutes of history the throughput is measured over: long enough to smooth a burst,
/// short enough to follow a change of the fleet.
const THROUGHPUT_MINUTES: u64 = 5;

impl Client {
    /// Where job `jid` stands: in a plain queue, the jobs before it and when it should start
    /// (its jobs ahead over the queue's throughput in the last 5 minutes); parked in a
    /// controlled queue, the jobs of its parking key before it ([`ParkedPlace`]); scheduled
    /// until a time; or not waiting. Costs a status read, one `position.lua` (log2(n) + 1
    /// `LINDEX` and an `LRANGE` of 129 at most, whatever the queue's length; for a parked job
    /// two `ZCOUNT` and log2(ties) + 1 `ZRANGE` of one rank), and the queue's minute counts.
    pub async fn position(&self, jid: &str) -> Result<Position> {
        let Some((queue, record)) = self.find_record(jid).await? else {
            return Ok(Position::NotWaiting {
                status: JobStatus::Unknown,
            });
        };
        match record.status {
            JobStatus::Queued => {}
            JobStatus::Scheduled { at } => return Ok(Position::Scheduled { at }),
            JobStatus::Retrying { next_at, .. } => return Ok(Position::Scheduled { at: next_at }),
            status => return Ok(Position::NotWaiting { status }),
        }
        let found = store::position::find(&mut self.connection(), self.keys(), &queue, jid).await?;
        Ok(match found {
            Found::Listed {
                ahead,
                exact,
                length,
            } => Position::Queued {
                expected_start: self.expected_start(&queue, ahead).await?,
                queue,
                ahead,
                length,
                exact,
            },
            Found::Parked(at) => Position::Parked {
                place: Some(self.parked_place(&queue, at).await?),
                queue,
            },
            Found::Elsewhere => Position::Parked { queue, place: None },
        })
    }

    /// A parked job's place, and when it should start: its parking key's even share of the
    /// queue's recent throughput over the keys holding parked jobs (a critical job: all of
    /// it), unknown while the queue is paused or when it runs in time windows. Gator counts no
    /// throughput per key: the share is exact for one key, an estimate for several.
    async fn parked_place(&self, queue: &str, at: ParkedAt) -> Result<ParkedPlace> {
        let expected_start = if at.paused {
            ExpectedStart::Unknown {
                reason: "its queue is paused",
            }
        } else if at.windows {
            ExpectedStart::Unknown {
                reason: "its queue runs in time windows",
            }
        } else {
            let (processed, elapsed, now) = self.throughput(queue).await?;
            let keys = if at.key.is_some() {
                at.waiting_keys.max(1)
            } else {
                1
            };
            estimate(processed, elapsed.saturating_mul(keys), at.ahead, now)
        };
        Ok(ParkedPlace {
            key: at.key,
            ahead: at.ahead,
            length: at.length,
            ready_keys: at.ready_keys,
            waiting_keys: at.waiting_keys,
            expected_start,
        })
    }

    /// When the job with `ahead` jobs before it on `queue` should start, at the queue's
    /// throughput in the last [`THROUGHPUT_MINUTES`] (the current minute counted for the part
    /// of it that passed).
    async fn expected_start(&self, queue: &str, ahead: u64) -> Result<ExpectedStart> {
        let (processed, elapsed, now) = self.throughput(queue).await?;
        Ok(estimate(processed, elapsed, ahead, now))
    }

    /// The jobs of `queue` processed in the last [`THROUGHPUT_MINUTES`], over how many ms
    /// (the current minute counted for the part of it that passed), and Redis's time now.
    async fn throughput(&self, queue: &str) -> Result<(u64, u64, u64)> {
        let now = self.redis_time().await?;
        let buckets = store::stats::buckets(
            &mut self.connection(),
            self.keys(),
            &[queue.to_owned()],
            store::stats::Resolution::Minute,
            THROUGHPUT_MINUTES,
            now,
        )
        .await?;
        let processed: u64 = buckets.iter().map(|(_, counts)| counts.processed).sum();
        let since = buckets.first().map_or(now, |(at, _)| *at);
        Ok((processed, now.saturating_sub(since), now))
    }
}

/// The expected start of a job with `ahead` jobs before it, `processed` jobs having been
/// processed in the last `elapsed_ms`, at `now_ms`.
fn estimate(processed: u64, elapsed_ms: u64, ahead: u64, now_ms: u64) -> ExpectedStart {
    if processed == 0 || elapsed_ms == 0 {
        return ExpectedStart::Unknown {
            reason: "no job of its queue was processed in the last 5 minutes",
        };
    }
    let per_ms = processed as f64 / elapsed_ms as f64;
    let wait_ms = (ahead as f64 / per_ms).min(1e15) as u64;
    ExpectedStart::At {
        at: UNIX_EPOCH + Duration::from_millis(now_ms.saturating_add(wait_ms)),
        per_minute: per_ms * 60_000.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_the_jobs_ahead_over_the_throughput() {
        let at = |ms| UNIX_EPOCH + Duration::from_millis(ms);
        assert_eq!(
            estimate(120, 60_000, 10, 1_000_000),
            ExpectedStart::At {
                at: at(1_005_000),
                per_minute: 120.0
            }
        );
        assert!(matches!(
            estimate(0, 60_000, 10, 1),
            ExpectedStart::Unknown { .. }
        ));
    }
}
