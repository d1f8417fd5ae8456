//! Middleware in one process: client middleware stamps each job with the tenant it was
//! dispatched for (and refuses jobs without one); a server layer sets that tenant for the run
//! (a tokio task-local, as an app would pick its database schema) and times it.
//!
//! Run: `GATOR_REDIS_URL=redis://127.0.0.1:6380 cargo run -p gator-examples --example middleware`
//! (`scripts/demo` runs it against a private Redis). It stops once every job has run.

use gator::middleware::JobRun;
use gator::worker::middleware::{Next, from_fn};
use gator::{CancellationToken, Client, Context, Payload, Worker, job};
use std::time::{Duration, Instant};

tokio::task_local! {
    /// The tenant of the request being handled: in the web app, set per request; in the worker,
    /// set per job by the layer below.
    static TENANT: String;
}

/// Reads the tenant from the task-local the server layer set, as any code it calls would.
#[job(queue = "tenants")]
async fn send_invoice(ctx: Context, invoice: u64) {
    let tenant = TENANT.try_with(Clone::clone).unwrap_or_default();
    println!(
        "    invoice {invoice} for tenant {tenant} (header {:?}, attempt {})",
        ctx.header("tenant"),
        ctx.attempt()
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("GATOR_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6380".into());
    // Client middleware: every job leaves with the current tenant in its headers, or not at all.
    let client = Client::builder(&url)
        .middleware(|job: &mut Payload| {
            let tenant = TENANT
                .try_with(Clone::clone)
                .map_err(|_| format!("{} dispatched outside a tenant's request", job.job))?;
            job.headers.insert("tenant".into(), tenant);
            Ok(())
        })
        .connect()
        .await?;

    let mut jids = Vec::new();
    for (tenant, invoice) in [("acme", 1), ("globex", 2), ("acme", 3)] {
        let dispatch = SendInvoice::call(invoice).through(&client).dispatch();
        jids.push(TENANT.scope(tenant.to_owned(), dispatch).await?);
    }
    match SendInvoice::call(4).through(&client).dispatch().await {
        Err(e) => println!("==> refused, as it should be: {e}"),
        Ok(jid) => anyhow::bail!("job {jid} was dispatched without a tenant"),
    }

    // Server middleware: the tenant from the job's headers is the run's task-local.
    let worker = Worker::builder()
        .client(client.clone())
        .queues("tenants")
        .layer(from_fn(|run: JobRun, next: Next| async move {
            let tenant = run.headers().get("tenant").cloned().unwrap_or_default();
            let started = Instant::now();
            let result = TENANT.scope(tenant.clone(), next.run(run)).await;
            println!("    (tenant {tenant}: ran in {:?})", started.elapsed());
            result
        }))
        .build()?;
    let stop = CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));
    println!("==> running the tenants' jobs:");
    for jid in &jids {
        client.wait_for(jid, Duration::from_secs(20)).await?;
    }
    stop.cancel();
    running.await??;
    println!("==> every tenant's job ran with its tenant set");
    Ok(())
}
