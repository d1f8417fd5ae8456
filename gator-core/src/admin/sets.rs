//! The admin side of the job lifecycle: look into a queue's scheduled, retry and dead sets, run
//! their jobs now, and delete them. The `gator-worker dead|retry|scheduled ...` subcommands
//! are a thin shell over these [`Admin`] methods.
//!
//! ```no_run
//! use gator_core::{Admin, Client, SetKind};
//!
//! # async fn demo() -> gator_core::Result<()> {
//! let admin = Admin::new(Client::connect("redis://127.0.0.1:6379").await?);
//! for entry in admin.list_set(SetKind::Dead, Some("mail"), 0, 20).await? {
//!     let error = entry.payload.as_ref().and_then(|p| p.error.as_deref());
//!     println!("{} {:?} {:?}", entry.score_ms, entry.jid(), error);
//! }
//! admin.run_now(SetKind::Dead, None, "0193a5f0-0000-7000-8000-000000000001").await?;
//! let retried = admin.run_all_now(SetKind::Dead, Some("mail")).await?;
//! # Ok(()) }
//! ```
//!
//! # Which queues
//! Every method takes `queue: Option<&str>`: `Some(q)` acts on that queue's set only (the name
//! is validated first), `None` on the sets of every known queue ([`Admin::known_queues`]),
//! one queue after the other. A jid is unique, so looking one up everywhere is safe: it is
//! found through its job's status record, a few reads whatever the sets hold (see
//! [`super::bulk`]).
//!
//! # What "run now" means
//! - **scheduled, retry:** the job goes to the tail of its queue now and keeps its `attempt`,
//!   so if it fails again it continues along the backoff curve instead of starting over.
//! - **dead** ("retry"): the job goes to the tail of its queue with `attempt` reset to 0, so
//!   it gets the full number of retries again, and without its deadline (`expires_in`): the
//!   operator asked for it to run, and an expired job would otherwise expire again at once.
//!
//! Each entry is moved by `move_to_queue.lua`, which removes it from the set and pushes it in
//! one atomic step, and only if it was still there: a worker promoting a due job, or another
//! admin, acting on the same entry at the same moment cannot enqueue it twice.
//!
//! # Entries that are never moved
//! An entry that is not a runnable payload stays where it is: text that does not parse as a
//! payload, and the dead entries a worker writes for such text (`job` empty, the text in
//! `raw`). No worker can run them, so moving them would only send them round queue → retry →
//! dead again over three weeks. They are listed ([`SetEntry::unparsed_text`]) so an operator
//! can look at them, and deleted with [`Admin::delete_job`] or [`Admin::clear_set`].
//!
//! A payload too deep to parse (arguments nested past what serde_json reads) is wrapped the
//! same way, but with the jid and name its envelope still says
//! ([`crate::payload::envelope`]): it is listed, deleted and retried by its jid, and a retry
//! puts the payload back as it came ([`crate::payload::Payload::unread_text`]), for a worker
//! to dead-letter again with its reason unless it can now be read.

use super::Admin;
use super::bulk::{BulkAction, Finder};
use crate::error::{Error, Result};
use crate::store::sets::{self, SetEntry, SetKind};

pub use crate::store::sets::MAX_MERGED_DEPTH;

// Here rather than in `store::sets`: what may be moved is admin policy, not storage.
impl SetEntry {
    /// Whether a worker could run this entry: it is a payload with a job name. The entries
    /// that are not ([`SetEntry::unparsed_text`]) are never moved back to a queue.
    pub fn is_runnable(&self) -> bool {
        self.payload.as_ref().is_some_and(|p| !p.job.is_empty())
    }

    /// The text a worker could not use, as it was stored: the entry itself if it does not
    /// parse as a payload, or else the payload's `raw` field, which a worker fills for text
    /// that did not parse and for arguments that did not fit the job, or its `raw_base64`
    /// field (bytes that were not UTF-8, in base64). `None` for a payload without either.
    pub fn unparsed_text(&self) -> Option<&str> {
        match &self.payload {
            None => Some(&self.raw),
            Some(p) => ["raw", "raw_base64"]
                .iter()
                .find_map(|field| p.extra.get(*field).and_then(|raw| raw.as_str())),
        }
    }
}

impl Admin {
    /// How many entries the `kind` set of `queue` holds (`None`: summed over every known
    /// queue).
    pub async fn set_len(&self, kind: SetKind, queue: Option<&str>) -> Result<usize> {
        let queues = self.target_queues(queue).await?;
        let lens = sets::lens(&mut self.connection(), self.keys(), kind, &queues).await?;
        Ok(lens.into_iter().sum())
    }

    /// Up to `count` entries (at most [`crate::admin::MAX_SET_PAGE`]) of the `kind` set
    /// from `offset`, lowest score (oldest death, earliest due time) first.
    ///
    /// On one queue without shards any offset costs the same (`ZRANGE` by rank). Merged over
    /// several queues (`None`, or a sharded queue), or over a scheduled set and the lists of
    /// jobs scheduled beyond the horizon, an offset needs the first `offset + count` entries
    /// of each, so `offset + count` may be at most [`MAX_MERGED_DEPTH`]:
    /// page deeper with [`Admin::set_page`], whose cursor costs the same at any depth.
    pub async fn list_set(
        &self,
        kind: SetKind,
        queue: Option<&str>,
        offset: usize,
        count: usize,
    ) -> Result<Vec<SetEntry>> {
        if count > crate::admin::MAX_SET_PAGE {
            return Err(Error::InvalidArgs {
                reason: format!(
                    "at most {} entries a page, not {count}",
                    crate::admin::MAX_SET_PAGE
                ),
            });
        }
        let mut conn = self.connection();
        let queues = self.target_queues(queue).await?;
        if let [queue] = queues.as_slice() {
            return sets::list(&mut conn, self.keys(), kind, queue, offset, count).await;
        }
        let wanted = offset.saturating_add(count);
        if wanted > MAX_MERGED_DEPTH {
            return Err(Error::InvalidArgs {
                reason: format!(
                    "offset {offset} is past the first {MAX_MERGED_DEPTH} entries of several \
                     queues merged: name one queue, or page with a cursor (Admin::set_page)"
                ),
            });
        }
        let mut entries = Vec::new();
        for queue in &queues {
            entries.extend(sets::list(&mut conn, self.keys(), kind, queue, 0, wanted).await?);
        }
        // Stable: equal scores keep the (sorted) queue order.
        entries.sort_by_key(|e| e.score_ms);
        Ok(entries.into_iter().skip(offset).take(count).collect())
    }

    /// The entry with `jid` in the `kind` set of `queue` (`None`: of any known queue), found
    /// through its status record (see [`super::bulk`]): a few reads whatever the sets hold.
    pub async fn find_job(
        &self,
        kind: SetKind,
        queue: Option<&str>,
        jid: &str,
    ) -> Result<Option<SetEntry>> {
        Finder::new(self, kind, queue).await?.find(jid).await
    }

    /// Moves the job `jid` of the `kind` set to the tail of its queue now; from the dead set
    /// with `attempt` reset to 0 (see the module docs). Returns false if there is no such
    /// entry, if it is not runnable, or if someone else moved or deleted it first.
    pub async fn run_now(&self, kind: SetKind, queue: Option<&str>, jid: &str) -> Result<bool> {
        match self.find_job(kind, queue, jid).await? {
            Some(entry) => self.run_entry(&entry).await,
            None => Ok(false),
        }
    }

    /// Moves an entry got from [`Admin::list_set`] or [`Admin::find_job`] to the tail of
    /// its queue now, as [`Admin::run_now`] does. Returns false if it is not runnable or is
    /// no longer in its set.
    pub async fn run_entry(&self, entry: &SetEntry) -> Result<bool> {
        if !entry.is_runnable() {
            return Ok(false);
        }
        sets::move_to_queue(&mut self.connection(), self.keys(), entry).await
    }

    /// Moves every runnable entry of the `kind` set to the tail of its queue, oldest first,
    /// as [`Admin::run_now`] does; returns how many were moved.
    ///
    /// It follows [`Admin::act_on_all`]'s cursor to the end, [`super::MAX_BULK`] entries a
    /// call, each moved by the atomic script (one round trip per entry), so it works on sets of
    /// any size, and an entry taken meanwhile by a worker or another admin is skipped, never
    /// enqueued twice. It moves only entries with a score up to the highest each set held when
    /// it reached it: a job that dies again at once is not chased.
    pub async fn run_all_now(&self, kind: SetKind, queue: Option<&str>) -> Result<usize> {
        self.sweep_all(BulkAction::Run, kind, queue).await
    }

    /// Deletes the job `jid` from the `kind` set. Returns false if there is no such entry
    /// (or someone else moved or deleted it first).
    pub async fn delete_job(&self, kind: SetKind, queue: Option<&str>, jid: &str) -> Result<bool> {
        match self.find_job(kind, queue, jid).await? {
            Some(entry) => self.delete_entry(&entry).await,
            None => Ok(false),
        }
    }

    /// Deletes an entry got from [`Admin::list_set`] or [`Admin::find_job`], runnable or
    /// not. Returns false if it was already gone.
    pub async fn delete_entry(&self, entry: &SetEntry) -> Result<bool> {
        sets::delete(&mut self.connection(), self.keys(), entry).await
    }

    /// Empties the `kind` set of `queue` (`None`: of every known queue) of what it held when
    /// it began, following [`Admin::act_on_all`]'s cursor to the end; returns how many entries
    /// were deleted.
    pub async fn clear_set(&self, kind: SetKind, queue: Option<&str>) -> Result<usize> {
        self.sweep_all(BulkAction::Delete, kind, queue).await
    }

    /// [`Admin::act_on_all`] from the start to the end; how many entries it acted on.
    async fn sweep_all(
        &self,
        action: BulkAction,
        kind: SetKind,
        queue: Option<&str>,
    ) -> Result<usize> {
        let (mut done, mut cursor) = (0, None);
        loop {
            let step = self
                .act_on_all(action, kind, queue, cursor.as_deref())
                .await?;
            done += step.done;
            match step.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(done),
            }
        }
    }
}
