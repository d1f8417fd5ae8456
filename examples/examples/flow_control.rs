//! Flow control in one process: a partner API that allows 3 concurrent calls, 2 of them for the
//! `east` region, at most 10 a second, with urgent calls first and one critical call outside
//! the limit; then an evenly spaced queue whose dispatches learn when they will run.
//!
//! Run: `GATOR_REDIS_URL=redis://127.0.0.1:6380 cargo run -p gator-examples --example flow_control`
//! (`scripts/demo` runs it against a private Redis). It stops once every job has run.

use gator::flow::FlowSetting;
use gator::{CancellationToken, Client, Context, Worker, job};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

static DONE: AtomicU64 = AtomicU64::new(0);

/// A call to the partner API: takes 200 ms.
#[job(queue = "partner")]
async fn call_partner(region: String, what: String, ctx: Context) {
    println!(
        "  [job] {:>6} ms  start {what:<16} region {region:<5} (job {})",
        since_start(),
        ctx.jid()
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    DONE.fetch_add(1, Ordering::Relaxed);
}

/// A poll of a feed, on an evenly spaced queue.
#[job(queue = "interval")]
async fn poll_feed(n: u32) {
    println!("  [job] {:>6} ms  poll {n}", since_start());
    DONE.fetch_add(1, Ordering::Relaxed);
}

fn since_start() -> u128 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    since_start();
    let url = std::env::var("GATOR_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6380".into());
    let client = Client::connect(&url).await?;
    let admin = gator::Admin::new(client.clone());

    // The queue's terms, in Redis for every worker: what `gator-worker queue ...` sets.
    let terms = [
        FlowSetting::Limit(Some(3)),
        FlowSetting::Share {
            key: Some("east".into()),
            percent: Some(67),
        },
        FlowSetting::Rate {
            name: None,
            rate: Some("10/1s".parse()?),
        },
    ];
    admin.set_queue_flow("partner", &terms).await?;
    println!("==> partner: at most 3 at once (east 2 of them), 10 a second");

    for i in 0..6 {
        CallPartner::call("east".into(), format!("east sync {i}"))
            .limit_key("east")
            .through(&client)
            .dispatch()
            .await?;
    }
    for i in 0..2 {
        CallPartner::call("west".into(), format!("west sync {i}"))
            .limit_key("west")
            .through(&client)
            .dispatch()
            .await?;
    }
    CallPartner::call("west".into(), "urgent refund".into())
        .limit_key("west")
        .priority(1)
        .through(&client)
        .dispatch()
        .await?;
    CallPartner::call("east".into(), "critical alert".into())
        .critical()
        .through(&client)
        .dispatch()
        .await?;

    // An evenly spaced queue: 4 a second, one every 250 ms over the whole fleet.
    admin
        .set_queue_flow(
            "interval",
            &[FlowSetting::Rate {
                name: None,
                rate: Some("4/1s".parse()?),
            }],
        )
        .await?;
    println!("==> interval: one poll every 250 ms; each dispatch gets a ticket");
    let now = SystemTime::now();
    for n in 0..4 {
        let ticket = client.dispatch_with_ticket(PollFeed::call(n)).await?;
        let eta = ticket
            .expected_start
            .map(|at| at.duration_since(now).unwrap_or_default().as_millis())
            .unwrap_or_default();
        println!("  poll {n}: {} ahead, expected in ~{eta} ms", ticket.ahead);
    }

    let stop = CancellationToken::new();
    let worker = Worker::builder()
        .client(client.clone())
        .queues("partner,interval")
        .concurrency(8)
        .build()?
        .run_until(stop.clone());
    let worker = tokio::spawn(worker);
    while DONE.load(Ordering::Relaxed) < 14 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.cancel();
    worker.await??;
    println!(
        "==> every job ran: the critical one at once, the urgent refund before the other west jobs, east never above 2"
    );
    Ok(())
}
