//! A job's life as one table: the states its status record can say ([`State`]), and every
//! transition between them with the one script or command that writes it ([`TRANSITIONS`]).
//! `docs/wire-format.md` shows the table as [`markdown`] renders it, and a test checks every
//! status write of the Lua scripts and the store against it: a write the table does not list,
//! or a row no script writes, fails it.

use std::fmt;

/// What a job's status record says of it (`gator:{<queue>}:job:<jid>`, its first word).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    /// Waiting in its queue's list, or parked on a controlled queue.
    Queued,
    /// Waiting in its queue's scheduled set for its time.
    Scheduled,
    /// Running for a moment already (a short run goes from queued to its outcome).
    Running,
    /// Failed, waiting in the retry set for its next attempt.
    Retrying,
    /// Its attempt ended waiting for a reply.
    Awaiting,
    /// A durable job parked until its time (a sleep, a slice yielded), holding no worker.
    Suspended,
    /// Succeeded (kept for the retention).
    Done,
    /// In the dead set.
    Dead,
    /// Given up by its retry strategy, not kept.
    Discarded,
    /// Cancelled before or while it ran.
    Cancelled,
    /// Not started by its deadline ([`crate::expiry`]): kept in the dead set, or dropped.
    Expired,
}

impl State {
    /// Every state, in the order of a job's life.
    pub const ALL: [State; 11] = [
        State::Queued,
        State::Scheduled,
        State::Running,
        State::Retrying,
        State::Awaiting,
        State::Suspended,
        State::Done,
        State::Dead,
        State::Discarded,
        State::Cancelled,
        State::Expired,
    ];

    /// The word the record starts with.
    pub fn name(self) -> &'static str {
        match self {
            State::Queued => "queued",
            State::Scheduled => "scheduled",
            State::Running => "running",
            State::Retrying => "retrying",
            State::Awaiting => "awaiting",
            State::Suspended => "suspended",
            State::Done => "done",
            State::Dead => "dead",
            State::Discarded => "discarded",
            State::Cancelled => "cancelled",
            State::Expired => "expired",
        }
    }

    /// The state a record's first word names.
    pub fn parse(word: &str) -> Option<State> {
        State::ALL.into_iter().find(|s| s.name() == word)
    }

    /// Whether the job will not change state again by itself.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            State::Done | State::Dead | State::Discarded | State::Cancelled | State::Expired
        )
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One way a job's record changes: from any of `from` (empty: a new job, no record yet) to
/// `to`, written by `by` (a script of `store/lua/`, or a store fn), when `when`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    /// The states it leaves; empty for a job that had no record.
    pub from: &'static [State],
    /// The state it records.
    pub to: State,
    /// What writes it, in the same step as the job's move: a script, or a store fn.
    pub by: &'static str,
    /// When.
    pub when: &'static str,
}

use State::*;

/// Every transition of a job's record. A record is deleted with its job (`delete.lua`,
/// `clear_queue.lua`), and expires after the retention once final.
pub const TRANSITIONS: &[Transition] = &[
    t(
        &[],
        Queued,
        "store::queue::enqueue",
        "a plain job dispatched now (`MULTI`: push, record)",
    ),
    t(
        &[],
        Queued,
        "enqueue.lua",
        "a job with flow options, or on a controlled queue",
    ),
    t(
        &[],
        Queued,
        "flow_lib.lua",
        "a job pushed or parked by a script that includes it",
    ),
    t(
        &[],
        Queued,
        "chain_push.lua",
        "a chain's next step, once the step before succeeded",
    ),
    t(&[], Scheduled, "schedule.lua", "dispatched for later"),
    t(
        &[],
        Scheduled,
        "relay_push.lua",
        "relayed from the outbox, for later",
    ),
    t(
        &[],
        Scheduled,
        "unique_dispatch.lua",
        "a unique job for later, or debounced",
    ),
    t(
        &[Scheduled, Retrying, Suspended],
        Queued,
        "promote_due.lua",
        "its time has come",
    ),
    t(
        &[Scheduled, Retrying, Suspended, Dead, Expired],
        Queued,
        "flow_lib.lua",
        "run now, or retried from the dead set (`move_to_queue.lua`)",
    ),
    t(
        &[Queued],
        Running,
        "store::status::mark_running",
        "it has run for 100 ms",
    ),
    t(
        &[Queued],
        Running,
        "kill.lua",
        "a job with a deadline (kept if missed) judged in time: it starts",
    ),
    t(
        &[Queued],
        Running,
        "cancelled.lua",
        "a job with a deadline (dropped if missed) judged in time: it starts",
    ),
    t(
        &[Queued, Running],
        Done,
        "store::ack::ack_and_take",
        "it succeeded, and its worker takes the next jobs (`MULTI`)",
    ),
    t(
        &[Queued, Running],
        Done,
        "ack.lua",
        "it succeeded (a chain or workflow step)",
    ),
    t(&[Queued, Running], Done, "ack_plain.lua", "it succeeded"),
    t(
        &[Queued, Running],
        Done,
        "flow_ack.lua",
        "it succeeded, on a controlled queue",
    ),
    t(
        &[Queued, Running],
        Done,
        "admit.lua",
        "it succeeded, settled with the next admission",
    ),
    t(&[Awaiting], Done, "reply_done.lua", "its reply came"),
    t(
        &[Queued, Running, Awaiting],
        Retrying,
        "retry.lua",
        "it failed, and has retries left",
    ),
    t(
        &[Queued, Running],
        Scheduled,
        "retry.lua",
        "it may not start now (its windows)",
    ),
    t(
        &[Queued, Running, Awaiting],
        Dead,
        "kill.lua",
        "it failed for good",
    ),
    t(
        &[Queued, Running],
        Suspended,
        "suspend.lua",
        "a durable job slept, or yielded its slice",
    ),
    t(
        &[Queued, Running],
        Suspended,
        "await.lua",
        "a durable job waits for a reply (`ctx.wait_for_reply`)",
    ),
    t(
        &[Suspended, Awaiting],
        Queued,
        "chain_push.lua",
        "a durable job's reply came, or a wait failed: back on its queue",
    ),
    t(
        &[Queued, Running],
        Awaiting,
        "await.lua",
        "it returned waiting for a reply",
    ),
    t(
        &[Queued, Scheduled, Retrying, Awaiting, Suspended],
        Cancelled,
        "cancel.lua",
        "cancelled waiting",
    ),
    t(
        &[Queued, Running],
        Cancelled,
        "cancelled.lua",
        "cancelled while it ran",
    ),
    t(
        &[Queued, Running],
        Discarded,
        "cancelled.lua",
        "its retry strategy gave it up",
    ),
    t(
        &[Queued, Running],
        Expired,
        "kill.lua",
        "not started by its deadline, kept in the dead set",
    ),
    t(
        &[Queued, Running],
        Expired,
        "cancelled.lua",
        "not started by its deadline, dropped (`on_expire = \"drop\"`)",
    ),
    t(
        &[Running],
        Queued,
        "put_back.lua",
        "its worker stopped before it ended",
    ),
    t(
        &[Running],
        Queued,
        "recover.lua",
        "its worker died (its lease expired)",
    ),
];

const fn t(from: &'static [State], to: State, by: &'static str, when: &'static str) -> Transition {
    Transition { from, to, by, when }
}

/// The table as `docs/wire-format.md` shows it.
pub fn markdown() -> String {
    let mut out = String::from("| from | to | written by | when |\n|---|---|---|---|\n");
    for row in TRANSITIONS {
        let from = if row.from.is_empty() {
            "(new)".to_owned()
        } else {
            row.from
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "| {from} | {} | `{}` | {} |\n",
            row.to, row.by, row.when
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_is_reached_and_names_round_trip() {
        for state in State::ALL {
            assert_eq!(State::parse(state.name()), Some(state));
            assert!(
                TRANSITIONS.iter().any(|t| t.to == state),
                "no transition reaches {state}"
            );
        }
        assert_eq!(State::parse("unknown"), None);
    }

    #[test]
    fn only_an_operator_retry_leaves_a_final_state() {
        for row in TRANSITIONS {
            let leaves_final = row.from.iter().any(|s| s.is_final());
            assert_eq!(
                leaves_final,
                row.from == [Scheduled, Retrying, Suspended, Dead, Expired],
                "{row:?} leaves a final state"
            );
        }
    }
}
