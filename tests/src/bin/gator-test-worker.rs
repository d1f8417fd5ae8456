//! A worker binary for the tests that need a real process (signals, kills), with one job.
use gator_core::job;

/// Sets `test:started` to "s1", sleeps `millis`, then sets `test:finished` to "s1".
#[job]
async fn mark_after(millis: u64) -> gator_core::Result<()> {
    let client = gator_core::default_client().await?;
    let mut conn = client.connection();
    redis::cmd("SET")
        .arg("test:started")
        .arg("s1")
        .query_async::<()>(&mut conn)
        .await?;
    tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
    redis::cmd("SET")
        .arg("test:finished")
        .arg("s1")
        .query_async::<()>(&mut conn)
        .await?;
    Ok(())
}

/// Counts its run in the hash `test:runs` under `id`, so tests can spot lost or doubled jobs.
#[job]
async fn count_run(id: u64) -> gator_core::Result<()> {
    let client = gator_core::default_client().await?;
    redis::cmd("HINCRBY")
        .arg("test:runs")
        .arg(id)
        .arg(1)
        .query_async::<()>(&mut client.connection())
        .await?;
    Ok(())
}

fn main() -> std::process::ExitCode {
    gator_worker::main()
}
