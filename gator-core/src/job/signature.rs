//! What `#[job]` knows of a job fn's signature: its wire parameters and the options it takes
//! from them ([`Signature`]), the static half of the catalogue's
//! [`Definition`](crate::catalogue::Definition). A leaf: the [`Job`](super::Job) trait carries
//! one, and the catalogue publishes it, so neither has to import the other.

use serde::{Deserialize, Serialize};

/// What `#[job]` knows of a job fn's signature and of the flow options it takes from its
/// arguments: the static half of a [`Definition`](crate::catalogue::Definition).
#[derive(Debug, Clone, Copy)]
pub struct Signature {
    /// The wire arguments, in order (not the `Context` or `State<T>` parameters); `None` for a
    /// hand-written `impl Job` that does not say (arity is then not checked).
    pub params: Option<&'static [(&'static str, &'static str)]>,
    /// Priority (`#[job(priority = ..)]`).
    pub priority: Option<u16>,
    /// Cost.
    pub cost: Option<u32>,
    /// Critical.
    pub critical: bool,
    /// The index of the argument whose value is the limit key (`limit_key = name`).
    pub limit_key_arg: Option<usize>,
    /// The index of the argument whose value is the fair key (`fair_key = name`).
    pub fair_key_arg: Option<usize>,
    /// The named rate limiter.
    pub rate: Option<&'static str>,
    /// The time windows, `HH:MM-HH:MM`.
    pub windows: &'static [&'static str],
    /// The windows' time zone.
    pub tz: Option<&'static str>,
    /// `no_overlap` (whole arguments) or `overlap_key = name` (one argument).
    pub overlap: Overlap,
    /// Where the delays between retries come from.
    pub backoff: Backoff,
}

/// Where a job's delays between retries come from, as the catalogue shows them. The default
/// curve has a random part, so its delays are not published: two workers would disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backoff {
    /// Gator's default curve (Sidekiq's, with jitter), or a job that did not say.
    Default,
    /// `backoff = ["1s", "30s"]`: these delays in ms, the last repeating.
    List(&'static [u64]),
    /// `backoff = my_fn`: the job's own function.
    Custom,
}

impl Signature {
    /// A signature that says nothing: what a hand-written `impl Job` has unless it sets one.
    pub const UNKNOWN: Signature = Signature {
        params: None,
        priority: None,
        cost: None,
        critical: false,
        limit_key_arg: None,
        fair_key_arg: None,
        rate: None,
        windows: &[],
        tz: None,
        overlap: Overlap::None,
        backoff: Backoff::Default,
    };
}

/// Where a job's no-overlap key comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    /// No overlap control.
    #[default]
    None,
    /// `no_overlap`: the wire name and the whole arguments (`"args"`).
    Args,
    /// `overlap_key = name`: the argument at this index (`{"arg": 1}`).
    Arg(usize),
}

impl Overlap {
    /// Whether there is no overlap control (the catalogue then leaves the field out).
    pub(crate) fn is_none(&self) -> bool {
        *self == Overlap::None
    }
}
