//! Acting on many entries of a set at once, a bounded amount per call: listed jids (at most
//! [`MAX_BULK`] a call), or every entry, [`MAX_BULK`] a call, each call's [`Bulk::next_cursor`]
//! saying where the next one goes on. The HTTP API answers one call per request, so a request
//! costs the same whatever the sets hold; `gator-worker dead|retry|scheduled ... --all` and
//! [`Admin::run_all_now`] / [`Admin::clear_set`] follow the cursors to the end.
//!
//! ```no_run
//! # async fn demo(admin: gator_core::Admin) -> gator_core::Result<()> {
//! use gator_core::SetKind;
//! use gator_core::admin::BulkAction;
//! let mut cursor = None;
//! loop {
//!     let step = admin.act_on_all(BulkAction::Run, SetKind::Dead, Some("mail"), cursor.as_deref()).await?;
//!     println!("retried {}", step.done);
//!     match step.next_cursor {
//!         Some(next) => cursor = Some(next),
//!         None => break,
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! # Finding a jid
//! A jid is found through its job's status record, which says which set it is in and with which
//! score (`crate::store::locate`): a few reads whatever the set holds. A jid no record leads to
//! is looked for among the first `locate::UNRECORDED_READ` entries of each set only.
//!
//! # The sweep of every entry
//! Queue after queue (sorted by name), each set lowest score first, up to the highest score it
//! held when the sweep reached it: an entry added later with a higher score (a job that dies
//! again after its retry) is left for the next sweep, not chased. Entries that stay (not
//! runnable: [`SetEntry::is_runnable`]) count toward the call's [`MAX_BULK`] and are stepped
//! over by the cursor, `<until>:<score>:<k>:<queue>`: in `queue`, entries up to score `until`
//! from score `score` on, less the `k` entries of that score that stayed. An entry added or
//! removed meanwhile at the cursor's score shifts the sweep by at most itself, as with `SCAN`.

use super::Admin;
use crate::error::{Error, Result};
use crate::store::locate;
use crate::store::sets::{self, SetEntry, SetKind, Start};
use crate::store::status;
use serde::Serialize;

/// The most entries one bulk call acts on or steps over, and the most jids it takes.
pub const MAX_BULK: usize = 1000;

/// Entries read per round trip of a sweep.
const PAGE: usize = 500;

/// The most entries of one score a cursor steps over (a bound on what `LIMIT` skips).
const MAX_TIES: usize = 10_000_000;

/// What a bulk call does to each entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkAction {
    /// Moves it to its queue now ([`Admin::run_now`]); entries that are not runnable stay.
    Run,
    /// Deletes it for good ([`Admin::delete_job`]).
    Delete,
}

/// What one bulk call did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Bulk {
    /// How many entries it moved or deleted.
    pub done: usize,
    /// The jids it was given that are not in the set (or not runnable, for [`BulkAction::Run`]).
    pub missing: Vec<String>,
    /// For a sweep of every entry: where the next call goes on; `None` once it is over.
    pub next_cursor: Option<String>,
}

/// Finds jids' entries in one set of some queues (see the module docs).
pub(super) struct Finder<'a> {
    admin: &'a Admin,
    kind: SetKind,
    queues: Vec<String>,
    /// The first entries of each set, read once for all the jids without a record.
    unrecorded: Option<Vec<SetEntry>>,
}

impl<'a> Finder<'a> {
    /// A finder in the `kind` set of `queue` (with its shards; `None`: every known queue).
    pub(super) async fn new(
        admin: &'a Admin,
        kind: SetKind,
        queue: Option<&str>,
    ) -> Result<Finder<'a>> {
        Ok(Finder {
            admin,
            kind,
            queues: admin.target_queues(queue).await?,
            unrecorded: None,
        })
    }

    /// The entry of `jid`: where its status record says it is; without a record that places
    /// it elsewhere, among the first entries of each set.
    pub(super) async fn find(&mut self, jid: &str) -> Result<Option<SetEntry>> {
        let (keys, mut conn) = (self.admin.keys(), self.admin.connection());
        if let Some((queue, record)) = status::find(&mut conn, keys, &self.queues, jid).await? {
            let Some(score) = locate::score_in(self.kind, &record.status) else {
                return Ok(None); // it is somewhere else
            };
            let found = locate::locate(&mut conn, keys, self.kind, &queue, jid, score).await?;
            if found.is_some() {
                return Ok(found);
            }
        }
        if self.unrecorded.is_none() {
            let first = locate::unrecorded(&mut conn, keys, self.kind, &self.queues).await?;
            self.unrecorded = Some(first);
        }
        let first = self.unrecorded.as_deref().unwrap_or_default();
        Ok(first.iter().find(|entry| entry.jid() == Some(jid)).cloned())
    }
}

/// Where a sweep stands: see the module docs.
#[derive(Debug, Clone, PartialEq)]
struct Cursor {
    until: f64,
    score: Option<f64>,
    k: usize,
    queue: String,
}

impl Cursor {
    fn parse(text: &str) -> Result<Cursor> {
        let bad = || Error::InvalidArgs {
            reason: format!(
                "invalid bulk cursor {:?}: pass the next_cursor of the answer before",
                gator_rules::cut(text, 100)
            ),
        };
        let mut parts = text.splitn(4, ':');
        let mut number = || parts.next().and_then(|p| p.parse::<f64>().ok());
        let (Some(until), Some(score)) = (number(), number()) else {
            return Err(bad());
        };
        let k = parts.next().and_then(|k| k.parse::<usize>().ok());
        let (Some(k), Some(queue)) = (k, parts.next()) else {
            return Err(bad());
        };
        if !until.is_finite() || !score.is_finite() || k > MAX_TIES {
            return Err(bad());
        }
        crate::store::keys::validate_stored_queue(queue)?;
        Ok(Cursor {
            until,
            score: Some(score),
            k,
            queue: queue.to_owned(),
        })
    }

    /// The cursor's text; a sweep that has read nothing of its queue yet starts it again.
    fn text(&self) -> String {
        let score = self.score.unwrap_or(f64::MIN);
        format!("{}:{score}:{}:{}", self.until, self.k, self.queue)
    }

    /// Where the next page of its queue starts.
    fn start(&self) -> Start {
        Start {
            score: self.score,
            inclusive: true,
            skip: self.k,
        }
    }

    /// Moves past `page` (just read from [`Cursor::start`]), of which the entries at `stayed`
    /// are still in the set.
    fn pass(&mut self, page: &[SetEntry], stayed: &[bool]) {
        let Some(last) = page.last() else { return };
        let at_last = page
            .iter()
            .zip(stayed)
            .filter(|(entry, stays)| **stays && entry.score == last.score)
            .count();
        self.k = if self.score == Some(last.score) {
            self.k + at_last
        } else {
            at_last
        };
        self.score = Some(last.score);
    }
}

impl Admin {
    /// Moves or deletes the entries of `jids` (at most [`MAX_BULK`]) in the `kind` set of
    /// `queue` (`None`: of any known queue). Each is found through its status record (see the
    /// [module docs](self)).
    pub async fn act_on_jids(
        &self,
        action: BulkAction,
        kind: SetKind,
        queue: Option<&str>,
        jids: &[String],
    ) -> Result<Bulk> {
        if jids.len() > MAX_BULK {
            return Err(Error::InvalidArgs {
                reason: format!("at most {MAX_BULK} jids a call, not {}", jids.len()),
            });
        }
        let mut finder = Finder::new(self, kind, queue).await?;
        let mut bulk = Bulk::default();
        for jid in jids {
            let acted = match finder.find(jid).await? {
                Some(entry) => self.act_on(action, &entry).await?,
                None => false,
            };
            if acted {
                bulk.done += 1;
            } else {
                bulk.missing.push(jid.clone());
            }
        }
        Ok(bulk)
    }

    /// One call of a sweep of every entry of the `kind` set of `queue` (`None`: of every known
    /// queue), from `cursor` (`None`: from the start): it acts on or steps over at most
    /// [`MAX_BULK`] entries, and says where the next call goes on (see the [module docs](self)).
    pub async fn act_on_all(
        &self,
        action: BulkAction,
        kind: SetKind,
        queue: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<Bulk> {
        let mut resume = cursor.map(Cursor::parse).transpose()?;
        let mut queues = self.target_queues(queue).await?;
        queues.sort();
        let first = resume
            .as_ref()
            .map_or(0, |c| queues.partition_point(|q| *q < c.queue));
        let (mut budget, mut bulk) = (MAX_BULK, Bulk::default());
        for queue in &queues[first..] {
            let here = match resume.take() {
                Some(cursor) if cursor.queue == *queue => Some(cursor),
                _ => self.enter(kind, queue).await?,
            };
            let Some(mut here) = here else { continue };
            let (done, finished) = self.sweep(action, kind, &mut here, &mut budget).await?;
            bulk.done += done;
            if !finished {
                bulk.next_cursor = Some(here.text());
                return Ok(bulk);
            }
        }
        Ok(bulk)
    }

    /// The start of a sweep of `queue`'s set, up to its highest score now; `None` if it is empty.
    async fn enter(&self, kind: SetKind, queue: &str) -> Result<Option<Cursor>> {
        let highest = sets::highest(&mut self.connection(), self.keys(), kind, queue).await?;
        Ok(highest.map(|until| Cursor {
            until,
            score: None,
            k: 0,
            queue: queue.to_owned(),
        }))
    }

    /// Sweeps `here`'s queue from where it stands, within `budget` entries; how many it acted
    /// on, and whether it reached the end (else `here` says where to go on).
    async fn sweep(
        &self,
        action: BulkAction,
        kind: SetKind,
        here: &mut Cursor,
        budget: &mut usize,
    ) -> Result<(usize, bool)> {
        let (keys, mut conn) = (self.keys(), self.connection());
        let mut done = 0;
        while *budget > 0 {
            let want = (*budget).min(PAGE);
            let from = (&here.start(), here.until);
            let page = sets::sweep(&mut conn, keys, kind, &here.queue, from, want).await?;
            *budget -= page.len();
            let stayed = match action {
                BulkAction::Delete => {
                    done += sets::delete_many(&mut conn, keys, &page).await?;
                    vec![false; page.len()]
                }
                BulkAction::Run => {
                    let mut stayed = Vec::with_capacity(page.len());
                    for entry in &page {
                        let moved = entry.is_runnable() && self.run_entry(entry).await?;
                        done += usize::from(moved);
                        // Gone meanwhile (another admin, a worker's promotion): not there.
                        stayed.push(!entry.is_runnable());
                    }
                    stayed
                }
            };
            here.pass(&page, &stayed);
            if page.len() < want {
                return Ok((done, true));
            }
        }
        Ok((done, false))
    }

    /// Moves or deletes one entry; whether it did (false: not runnable, or gone meanwhile).
    async fn act_on(&self, action: BulkAction, entry: &SetEntry) -> Result<bool> {
        match action {
            BulkAction::Run => self.run_entry(entry).await,
            BulkAction::Delete => self.delete_entry(entry).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(score: f64) -> SetEntry {
        SetEntry {
            kind: SetKind::Dead,
            queue: "mail".to_owned(),
            score_ms: score as u64,
            score,
            raw: String::new(),
            payload: None,
        }
    }

    #[test]
    fn a_cursor_round_trips_and_a_bad_one_is_refused() {
        let cursor = Cursor::parse("1764579600000:1764579500000:3:mail#2").expect("valid");
        assert_eq!(cursor.text(), "1764579600000:1764579500000:3:mail#2");
        for bad in [
            "",
            "1:2:3",
            "x:1:0:q",
            "1:1:-1:q",
            "inf:1:0:q",
            "1:1:99999999999:q",
            "1:1:0:a b",
        ] {
            assert!(Cursor::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn the_cursor_steps_over_the_entries_that_stayed_at_its_score() {
        let mut cursor = Cursor::parse("9:0:0:mail").expect("valid");
        cursor.score = None;
        // Three entries of score 5, the first and the last stayed: the next page skips two.
        let page = [entry(4.0), entry(5.0), entry(5.0), entry(5.0)];
        cursor.pass(&page, &[true, true, false, true]);
        assert_eq!((cursor.score, cursor.k), (Some(5.0), 2));
        // The next page goes on at score 5: one more stayed there, then one at 6 moved.
        cursor.pass(&[entry(5.0)], &[true]);
        assert_eq!((cursor.score, cursor.k), (Some(5.0), 3));
        cursor.pass(&[entry(5.0), entry(6.0)], &[true, false]);
        assert_eq!((cursor.score, cursor.k), (Some(6.0), 0));
    }
}
