//! A scheduled, retry or dead set read a page at a time, over one queue or all of them merged
//! by score, at the same cost however deep the page: each page reads at most `count + 1` entries
//! of each queue, by score (`ZRANGE ... BYSCORE LIMIT`), from where the page before ended.
//!
//! ```no_run
//! # async fn demo(admin: gator_core::Admin) -> gator_core::Result<()> {
//! use gator_core::SetKind;
//! let mut cursor = None;
//! loop {
//!     let page = admin.set_page(SetKind::Dead, None, cursor.as_deref(), 100).await?;
//!     for entry in &page.entries {
//!         println!("{} {:?}", entry.score_ms, entry.jid());
//!     }
//!     match page.next_cursor {
//!         Some(next) => cursor = Some(next),
//!         None => break,
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! # The cursor
//! `<score>:<k>:<queue>`: the last entry shown had this score and was the `k`-th entry of that
//! score in that queue's set. Entries are ordered by score, then queue name, then as Redis
//! orders a set (by member), so the next page is, in each queue: entries above the score, and
//! at the score itself those of later queues, and of this queue those after the first `k`. An
//! entry removed or added meanwhile shifts a page by at most itself, as with Redis's `SCAN`.

use super::Admin;
use crate::error::{Error, Result};
use crate::store::sets::{self, SetEntry, SetKind, Start};
use serde::Serialize;

/// The most entries one page may ask for.
pub const MAX_SET_PAGE: usize = 1000;

/// One page of a set ([`Admin::set_page`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SetPage {
    /// The entries, lowest score (oldest death, soonest due) first.
    pub entries: Vec<SetEntry>,
    /// Where the next page starts; `None` after the last.
    pub next_cursor: Option<String>,
}

/// What a cursor says: see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Cursor {
    score: f64,
    k: usize,
    queue: String,
}

impl Cursor {
    fn parse(text: &str) -> Result<Cursor> {
        let bad = || Error::InvalidArgs {
            reason: format!(
                "invalid set cursor {:?}: pass the next_cursor of the page before",
                gator_rules::cut(text, 100)
            ),
        };
        let mut parts = text.splitn(3, ':');
        let (Some(score), Some(k), Some(queue)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let score: f64 = score.parse().map_err(|_| bad())?;
        let k: usize = k.parse().map_err(|_| bad())?;
        if !score.is_finite() || k > MAX_TIES {
            return Err(bad());
        }
        crate::store::keys::validate_stored_queue(queue)?;
        Ok(Cursor {
            score,
            k,
            queue: queue.to_owned(),
        })
    }

    fn text(&self) -> String {
        format!("{}:{}:{}", self.score, self.k, self.queue)
    }

    /// Where `queue`'s part of the next page starts.
    fn start_of(&self, queue: &str) -> Start {
        match queue.cmp(self.queue.as_str()) {
            std::cmp::Ordering::Less => Start {
                score: Some(self.score),
                inclusive: false,
                skip: 0,
            },
            std::cmp::Ordering::Equal => Start {
                score: Some(self.score),
                inclusive: true,
                skip: self.k,
            },
            std::cmp::Ordering::Greater => Start {
                score: Some(self.score),
                inclusive: true,
                skip: 0,
            },
        }
    }
}

/// The most entries of one score a cursor steps over: more entries than any set holds at one
/// millisecond, and a bound on what `LIMIT` skips.
const MAX_TIES: usize = 10_000_000;

impl Admin {
    /// Up to `count` (at most [`MAX_SET_PAGE`]) entries of the `kind` set of `queue` (with its
    /// shards; `None`: of every known queue, merged by score), from `cursor` (`None`: from the
    /// start). Reads at most `count + 1` entries of each queue, however deep the page.
    pub async fn set_page(
        &self,
        kind: SetKind,
        queue: Option<&str>,
        cursor: Option<&str>,
        count: usize,
    ) -> Result<SetPage> {
        if count == 0 || count > MAX_SET_PAGE {
            return Err(Error::InvalidArgs {
                reason: format!("a page holds 1 to {MAX_SET_PAGE} entries, not {count}"),
            });
        }
        let cursor = cursor.map(Cursor::parse).transpose()?;
        let mut queues = self.target_queues(queue).await?;
        queues.sort();
        let starts: Vec<(&str, Start)> = queues
            .iter()
            .map(|queue| {
                let start = cursor.as_ref().map_or(
                    Start {
                        score: None,
                        inclusive: true,
                        skip: 0,
                    },
                    |c| c.start_of(queue),
                );
                (queue.as_str(), start)
            })
            .collect();
        // One more than a page: whether anything follows it is then known, and the last page
        // says so instead of leading to an empty one.
        let mut conn = self.connection();
        let read = sets::pages(&mut conn, self.keys(), kind, &starts, count + 1).await?;
        Ok(merge(read, count, cursor.as_ref()))
    }
}

/// The first `count` entries of the queues' pages (each sorted, in queue order, and each read
/// one entry past a page), and the cursor after the last of them if any entry is left.
fn merge(read: Vec<Vec<SetEntry>>, count: usize, cursor: Option<&Cursor>) -> SetPage {
    let mut merged: Vec<(usize, usize, SetEntry)> = read
        .into_iter()
        .enumerate()
        .flat_map(|(q, page)| page.into_iter().enumerate().map(move |(i, e)| (q, i, e)))
        .collect();
    // Stable on (score, queue, position): queue order is the sorted order of their names.
    merged.sort_by(|a, b| {
        a.2.score
            .total_cmp(&b.2.score)
            .then(a.0.cmp(&b.0))
            .then(a.1.cmp(&b.1))
    });
    let more = merged.len() > count;
    merged.truncate(count);
    let next_cursor = match merged.last() {
        Some((q, _, last)) if more => {
            // Its rank among the entries of its score in its queue: those shown on this page,
            // and those the cursor had stepped over already.
            let shown = merged
                .iter()
                .filter(|(eq, _, e)| eq == q && e.score == last.score)
                .count();
            let before = cursor
                .filter(|c| c.queue == last.queue && c.score == last.score)
                .map_or(0, |c| c.k);
            Some(
                Cursor {
                    score: last.score,
                    k: before + shown,
                    queue: last.queue.clone(),
                }
                .text(),
            )
        }
        _ => None,
    };
    SetPage {
        entries: merged.into_iter().map(|(_, _, e)| e).collect(),
        next_cursor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(queue: &str, score: f64, jid: &str) -> SetEntry {
        SetEntry {
            kind: SetKind::Dead,
            queue: queue.to_owned(),
            score_ms: score as u64,
            score,
            raw: jid.to_owned(),
            payload: None,
        }
    }

    #[test]
    fn a_cursor_round_trips_and_a_bad_one_is_refused() {
        let cursor = Cursor::parse("1764579600000:3:mail#2").expect("valid");
        assert_eq!(cursor.text(), "1764579600000:3:mail#2");
        assert_eq!(Cursor::parse("1.5:0:q").expect("valid").score, 1.5);
        for bad in [
            "",
            "1:2",
            "x:1:q",
            "1:-1:q",
            "inf:0:q",
            "1:99999999999:q",
            "1:0:a b",
        ] {
            assert!(Cursor::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn pages_merge_by_score_then_queue_and_the_cursor_counts_ties() {
        let a = vec![entry("a", 1.0, "a1"), entry("a", 5.0, "a5")];
        let b = vec![entry("b", 1.0, "b1"), entry("b", 1.0, "b1x")];
        let page = merge(vec![a, b], 2, None);
        let shown: Vec<&str> = page.entries.iter().map(|e| e.raw.as_str()).collect();
        assert_eq!(shown, ["a1", "b1"]);
        // b's first entry of score 1 was shown: the next page skips one tie in b.
        assert_eq!(page.next_cursor.as_deref(), Some("1:1:b"));
        let cursor = Cursor::parse("1:1:b").expect("valid");
        assert!(!cursor.start_of("a").inclusive);
        assert_eq!(cursor.start_of("b").skip, 1);
        assert_eq!(cursor.start_of("c").skip, 0);
        // On the next page, b's remaining tie keeps counting from the cursor's.
        let next = merge(
            vec![vec![entry("a", 5.0, "a5")], vec![entry("b", 1.0, "b1x")]],
            1,
            Some(&cursor),
        );
        assert_eq!(next.entries[0].raw, "b1x");
        assert_eq!(next.next_cursor.as_deref(), Some("1:2:b"));
    }

    #[test]
    fn the_last_page_has_no_cursor() {
        let page = merge(vec![vec![entry("a", 1.0, "a1")], Vec::new()], 5, None);
        assert_eq!(page.entries.len(), 1);
        assert_eq!(page.next_cursor, None);
    }
}
