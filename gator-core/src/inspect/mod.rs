//! What the dashboard, the HTTP API and `gator-worker stats|queues|processes` show: the
//! fleet's state read from Redis in a few pipelines, and the few actions they add to
//! [`crate::admin`] (clearing a queue, enqueueing by wire name).
//!
//! ```no_run
//! # async fn demo(client: gator_core::Client) -> gator_core::Result<()> {
//! use gator_core::inspect::HistorySpan;
//! let overview = client.overview().await?;
//! println!("{} processed, {} failed, {} dead", overview.processed, overview.failed, overview.dead);
//! for queue in client.queue_infos().await? {
//!     println!("{}: {} waiting, oldest {:?} ms", queue.name, queue.size, queue.latency_ms);
//! }
//! let last_hour = client.history(HistorySpan::Hour, None).await?;
//! # Ok(()) }
//! ```
//!
//! # What it costs
//! Every read is bounded by the number of queues and live processes, never by the number of
//! jobs: a page of a set ([`Client::set_page`]) reads at most its size from each queue however
//! deep it is, and [`Client::search`] examines at most its `budget` entries per call; both
//! return a cursor to go on from. Counts of controlled queues ([`crate::flow`]) cost one
//! command per parking key.
//!
//! # Clocks
//! Ages (latency, heartbeat age, running time) are measured against Redis's clock. A job's
//! `enqueued_at` was stamped by its producer (from its estimate of Redis time for scheduled
//! jobs), so a latency is as good as that producer's clock: it is shown, never acted on.

mod enqueue;
mod flows;
mod history;
mod overview;
pub mod preview;
mod processes;
mod queues;
mod search;
mod search_terms;
mod set_pages;

pub use flows::FlowInFlight;
pub use history::{HistoryPoint, HistorySpan};
pub use overview::{Overview, RedisInfo};
pub use processes::{ProcessInfo, RunningJob};
pub use queues::QueueInfo;
pub use search::{DEFAULT_BUDGET, Place, SearchField, SearchHit, SearchPage, SearchQuery};
pub use set_pages::{MAX_SET_PAGE, SetPage};
