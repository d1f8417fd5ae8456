//! The README's first examples compile as shown: "A job, a dispatch, a worker" (the app's jobs
//! and its worker binary), the retry strategy of "Job options", "Chains", and "Job context and
//! application state". Each block's code is here in a module of its own, with what it assumes
//! around it; the test at the end checks every line the README shows is here, in order.
//! Nothing runs: the fns that would need Redis are never called.

#[path = "readme/check.rs"]
mod readme_check;

// The README's `src/lib.rs of your app`, as a module named like the crate it stands for.
// rustfmt would spread its one-line struct over four lines, and the README shows one.
#[rustfmt::skip]
#[allow(dead_code)] // needs Redis: compiled, never called
mod my_app {
    // src/lib.rs of your app
    use gator::job;

    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct Order { pub id: u64, pub cents: u64 }

    /// Runs on the `high` queue; an `Err` is a failure that is retried with backoff.
    #[job(queue = "high")]
    pub async fn charge_card(order: Order) -> Result<(), String> {
        println!("charging {} cents for order {}", order.cents, order.id);
        Ok(())
    }

    /// A plain fn runs on a blocking thread, so it never stalls the async runtime.
    #[job(name = "images.resize")] // a wire name that survives renaming the fn
    pub fn resize_image(path: String, width: u32) {
        println!("resizing {path} to {width}px");
    }

    // Anywhere in your app (GATOR_REDIS_URL, default redis://127.0.0.1:6379):
    pub async fn checkout() -> gator::Result<()> {
        let jid = ChargeCard::dispatch(Order { id: 7, cents: 1999 }).await?;
        ResizeImage::dispatch_in(std::time::Duration::from_secs(60), "cat.png".into(), 320).await?;
        ResizeImage::call("dog.png".into(), 640).queue("bulk").dispatch().await?; // another queue
        ResizeImage::dispatch_many(vec![("a.png".into(), 64), ("b.png".into(), 64)]).await?; // one round trip
        println!("dispatched {jid}");
        Ok(())
    }
}

/// "Dispatching: one builder per thing dispatched", with the jobs of `my_app`.
#[allow(dead_code)] // needs Redis: compiled, never called
mod builder {
    use super::my_app::ResizeImage;
    use gator::{Chain, Client};
    use std::time::{Duration, SystemTime};

    #[rustfmt::skip] // the guide aligns its comments
    pub async fn dispatches(client: &Client, closing: SystemTime) -> gator::Result<()> {
        ResizeImage::call("a.png".into(), 64)
            .queue("bulk")                          // another queue
            .after(Duration::from_secs(60))         // or .at(time): on Redis's clock
            .priority(10)                           // any flow option (Flow control)
            .expires_at(closing)                    // or .expires_in(ttl)
            .unique()                               // or .unique_for(ttl), .unique_key(..), .debounce(..)
            .through(client)                        // this client, not the process-wide default
            .dispatch()
            .await?;
        Chain::new()
            .then(ResizeImage::call("b.png".into(), 64))
            .then(ResizeImage::call("b.png".into(), 128))
            .at(closing)                            // its first step; a step takes no time of its own
            .through(client)
            .dispatch()
            .await?;
        Ok(())
    }
}

// The README's `src/bin/worker.rs`. Its `main` is this test binary's crate root `main`, which
// the test harness keeps uncalled; `my_app` is the module above.
// src/bin/worker.rs: the whole worker
#[allow(unused_imports)] // a module here; in the app a crate, which linking uses
use my_app as _; // links the crate, which registers its jobs
#[rustfmt::skip] // the README shows it on one line
fn main() -> std::process::ExitCode { gator::main() }

/// "Job options": a retry strategy that sees the job's typed error.
mod retry_strategy {
    use gator::{JobError, job};
    use std::time::Duration;

    /// The partner API's typed error the strategy looks for.
    #[derive(Debug)]
    #[allow(dead_code)] // made by the partner's client, matched by the strategy
    pub enum ApiError {
        RateLimited { retry_after: Duration },
        Gone,
    }

    impl std::fmt::Display for ApiError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{self:?}")
        }
    }

    impl std::error::Error for ApiError {}

    /// The client of the partner API the README's job calls, named as it is there.
    pub struct Partner;

    impl Partner {
        pub async fn sync(&self, _id: u64) -> Result<(), ApiError> {
            Err(ApiError::Gone)
        }
    }

    #[allow(non_upper_case_globals)] // the README calls it `partner`
    const partner: Partner = Partner;

    use gator::retry::{RetryContext, RetryDecision};

    fn by_kind(failure: &RetryContext<'_>) -> RetryDecision {
        match failure.error.downcast_ref::<ApiError>() {
            Some(ApiError::RateLimited { retry_after }) => RetryDecision::RetryIn(*retry_after),
            Some(ApiError::Gone) => RetryDecision::Discard,
            _ if failure.failures < 5 => RetryDecision::RetryIn(Duration::from_secs(30)),
            _ => RetryDecision::Dead,
        }
    }

    #[job(queue = "partner", retry = by_kind)]
    async fn sync_account(id: u64) -> Result<(), JobError> {
        partner.sync(id).await.map_err(JobError::caused_by) // ApiError: std::error::Error
    }
}

/// "Chains": two typed steps, the second on a queue of its own.
mod chains {
    use gator::job;

    #[job]
    async fn fetch_page(_url: String) {}

    #[job]
    async fn parse_page(_url: String, _depth: u32) {}

    #[allow(dead_code)] // needs Redis: compiled, never called
    async fn dispatch(url: String) -> gator::Result<String> {
        use gator::Chain;
        let chain_id = Chain::new()
            .then(FetchPage::call(url.clone())) // each step is a typed `call`
            .then(ParsePage::call(url, 2).queue("parse")) // on its own queue if you like
            .dispatch() // .at(time) or .after(delay) first for later
            .await?;
        Ok(chain_id)
    }
}

/// "Job context and application state": a job that takes its `Context` and a `State<Db>`.
mod context_and_state {
    /// Stands in for the sqlx crate, which Gator does not depend on: a pool is cheap to clone.
    mod sqlx {
        #[derive(Clone)]
        pub struct PgPool;
    }

    async fn mail_receipt(_db: &Db, _order_id: u64) -> anyhow::Result<()> {
        Ok(())
    }

    use gator::{Context, State, job};

    #[derive(Clone)] // cloned for each run: make it cheap (a pool, an Arc)
    pub struct Db(sqlx::PgPool);

    #[rustfmt::skip] // the README shows the signature on one line
    #[job(queue = "mail", timeout = "2m")]
    pub async fn send_receipt(order_id: u64, ctx: Context, State(db): State<Db>) -> anyhow::Result<()> {
        println!("{} attempt {} on {}", ctx.jid(), ctx.attempt(), ctx.queue()); // attempt is 1 first
        tokio::select! {
            sent = mail_receipt(&db, order_id) => sent,
            // At the timeout, or at the worker's shutdown deadline: stop cleanly. At the
            // shutdown it goes back to its queue whatever it returns, and runs again.
            _ = ctx.cancelled() => anyhow::bail!("cancelled"),
        }
    }

    /// Stands in for a batch's pages.
    struct Page(bool);
    impl Page {
        fn is_last(&self) -> bool {
            self.0
        }
        async fn send(&self) -> anyhow::Result<()> {
            Ok(())
        }
    }
    fn pages(batch: u64) -> Vec<Page> {
        (0..batch).map(|page| Page(page + 1 == batch)).collect()
    }

    #[job(queue = "mail")]
    pub async fn send_batch(batch: u64, ctx: Context) -> anyhow::Result<()> {
        for page in pages(batch) {
            page.send().await?;
            if ctx.is_cancelled() {
                if page.is_last() {
                    // Told of the shutdown as the last page went out: nothing is left to do.
                    ctx.finished_despite_shutdown();
                }
                return Ok(()); // otherwise it goes back to its queue, and runs again
            }
        }
        Ok(())
    }

    #[allow(dead_code)] // needs Redis: compiled, never called
    async fn dispatch() -> gator::Result<()> {
        SendReceipt::dispatch(42).await?; // the wire arguments only
        Ok(())
    }
}

#[test]
fn the_readme_shows_this_code() {
    let here = include_str!("readme_jobs.rs");
    readme_check::assert_shows("README.md", "## Gator in a minute", 1, here);
    readme_check::assert_shows(
        "docs/guide/jobs.md",
        "## A job, a dispatch, a worker",
        1,
        here,
    );
    readme_check::assert_shows("README.md", "## Gator in a minute", 2, here);
    readme_check::assert_shows(
        "docs/guide/jobs.md",
        "## A job, a dispatch, a worker",
        2,
        here,
    );
    readme_check::assert_shows(
        "docs/guide/jobs.md",
        "## Dispatching: one builder per thing dispatched",
        1,
        here,
    );
    readme_check::assert_shows(
        "docs/guide/scheduling.md",
        "## Retries and backoff",
        1,
        here,
    );
    readme_check::assert_shows("docs/guide/chains-workflows.md", "## Chains", 1, here);
    readme_check::assert_shows(
        "docs/guide/context.md",
        "# Context and application state",
        1,
        here,
    );
}
