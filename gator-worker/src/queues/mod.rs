//! The queues a worker serves: the `--queues` spec ([`QueueSelection`], in [`spec`]) and the
//! order to try them in for each fetch (strict, weighted shuffle, or every known queue:
//! [`QueueOrder`], in [`order`]). The config parses the spec here; the fetcher, the poller and
//! recovery all take their queues from one [`QueueOrder`] (and [`crate::watchers`] picks which
//! queue each idle processor watches). On a queue shared with workers that run jobs this one
//! does not, the fetches pass over those jobs ([`Passing`], in [`passing`]).

pub mod order;
pub mod passing;
pub mod spec;

pub use order::{QueueOrder, weighted_shuffle};
pub use passing::Passing;
pub use spec::{QueueSelection, QueueSpecError};
