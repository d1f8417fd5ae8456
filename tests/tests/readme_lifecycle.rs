//! The README's examples of a job's life after its dispatch compile as shown: "Job status and
//! results", "Jobs that wait for a reply" and "Cancelling a job". Each block's code is here in
//! a module of its own: its jobs as items, and the statements it shows in an async fn that
//! takes what they name (`client`, `jid`). Nothing runs: those fns need Redis and are never
//! called.

#[path = "readme/check.rs"]
mod readme_check;

/// "Job status and results": a job that returns a value, looked up by its jid.
mod status_and_results {
    use gator::{Client, job};
    use std::time::Duration;

    /// What the README's job returns, kept as its result.
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct Receipt {
        order: u64,
        cents: u64,
    }

    /// The job's own error type: any `Display` fails the attempt with its text.
    pub struct BillingError;

    impl std::fmt::Display for BillingError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("the card was declined")
        }
    }

    #[rustfmt::skip] // the README keeps its comment on the signature's line
    #[job(queue = "billing")]
    async fn charge(order: u64) -> Result<Receipt, BillingError> {   // Receipt: Serialize
        Ok(Receipt { order, cents: 4200 })
    }

    #[allow(dead_code)] // needs Redis: compiled, never called
    async fn look_up(client: Client) -> gator::Result<Option<Receipt>> {
        let jid = Charge::call(1234).dispatch().await?;
        client.status(&jid).await?; // JobStatus::Queued
        client.wait_for(&jid, Duration::from_secs(30)).await?; // JobStatus::Done { finished_at, attempts }
        let receipt: Option<Receipt> = client.result(&jid).await?;
        Ok(receipt)
    }
}

/// "Jobs that wait for a reply": a job that ends its attempt waiting, its handler, and the
/// webhook's side.
#[allow(unused_variables)] // the README's `confirmation` is there to show its type
mod replies {
    use gator::reply::Delivery;
    use gator::{Client, Context, JobError, job};
    use std::time::Duration;

    /// What the partner sends back, typed.
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct Confirmation {
        accepted: bool,
    }

    /// The partner's API the README's job calls, named as it is there.
    pub struct Partner;

    impl Partner {
        pub async fn submit(&self, _order: u64) -> Result<(), JobError> {
            Ok(())
        }
    }

    #[allow(non_upper_case_globals)] // the README calls it `partner`
    const partner: Partner = Partner;

    #[rustfmt::skip] // the README shows the call on one line
    #[job(queue = "orders")]
    async fn place_order(ctx: Context, order: u64) -> Result<(), JobError> {
        partner.submit(order).await?;                       // the partner confirms later
        ctx.await_reply_then(format!("order:{order}"), Duration::from_secs(300), ConfirmOrder::call(order));
        Ok(())
    }

    #[job(queue = "orders")]
    async fn confirm_order(ctx: Context, order: u64) -> Result<(), JobError> {
        let confirmation: Option<Confirmation> = ctx.reply()?; // typed
        Ok(())
    }

    #[allow(dead_code)] // needs Redis: compiled, never called
    async fn webhook(client: Client, confirmation: Confirmation) -> gator::Result<()> {
        // In the webhook handler or the Kafka consumer, in any process:
        match client.reply("order:1234", &confirmation).await? {
            Delivery::Delivered => {} // the waiting job goes on with it
            Delivery::Kept => {}      // no job waits yet: kept 10 min for the wait that comes
            Delivery::Duplicate => {} // a reply to this key came first: this one is dropped
        }
        Ok(())
    }
}

/// "Cancelling a job": by its jid, a workflow's steps, and a job that obeys.
mod cancelling {
    use gator::{Client, Context, JobError, job};

    async fn build_report(_report: u64) -> Result<(), JobError> {
        Ok(())
    }

    use gator::Cancellation;

    #[allow(dead_code, unused_variables)] // needs Redis; `status` is there to show the variant
    async fn cancel(client: Client, jid: String, workflow_id: String) -> gator::Result<()> {
        match client.cancel(&jid).await? {
            Cancellation::Removed => {} // it was queued, scheduled or retrying: it will not run
            Cancellation::Stopping => {} // it is running: its worker stops it within a second
            Cancellation::Finished(status) => {} // too late: done, dead or cancelled already
            Cancellation::Unknown => {} // no such jid
        }
        client.cancel_workflow(&workflow_id).await?; // its steps that have not finished
        Ok(())
    }

    #[job(queue = "exports")]
    async fn export(ctx: Context, report: u64) -> Result<(), JobError> {
        tokio::select! {
            () = ctx.cancelled() => Err(JobError::new("cancelled")),   // fires within a second
            done = build_report(report) => done,
        }
    }
}

#[test]
fn the_readme_shows_this_code() {
    let here = include_str!("readme_lifecycle.rs");
    readme_check::assert_shows("docs/guide/status.md", "## Job status and results", 1, here);
    readme_check::assert_shows(
        "docs/guide/replies.md",
        "# Jobs that wait for a reply",
        1,
        here,
    );
    readme_check::assert_shows("docs/guide/cancel.md", "# Cancelling a job", 1, here);
}
