//! The README's "Cron and periodic jobs" examples compile as shown: two jobs declared periodic,
//! and an entry added and removed at run time through the admin API, in an async fn that takes
//! the `client` it names. Nothing runs: that fn needs Redis and is never called.

#[path = "readme/check.rs"]
mod readme_check;

use gator::{Client, Context, job};

/// The job the README's run-time entry sends, with its region as fixed argument.
#[job(queue = "reports")]
async fn send_digest(_region: String) {}

#[rustfmt::skip] // the README shows each job on two lines
#[allow(unused_variables)] // the README's `/* ... */` stands for the code that uses `ctx`
mod declared {
    use super::*;

    #[job(cron = "*/5 * * * *")]
    async fn sweep_expired_sessions() -> anyhow::Result<()> { /* ... */ Ok(()) }

    #[job(queue = "reports", cron = "0 9 * * MON-FRI", tz = "Europe/Berlin")]
    async fn morning_report(ctx: Context) -> anyhow::Result<()> { /* ... */ Ok(()) }
}

#[allow(dead_code)] // needs Redis: compiled, never called
#[rustfmt::skip] // the README shows the call on one line
async fn at_run_time(client: Client) -> gator::Result<()> {
    let admin = gator::Admin::new(client);
    admin.add_periodic("digest-eu", "0 7 * * *", Some("Europe/Paris"), SendDigest::call("eu".into())).await?;
    admin.remove_periodic("digest-eu").await?;
    Ok(())
}

#[test]
fn the_readme_shows_this_code() {
    let here = include_str!("readme_cron.rs");
    readme_check::assert_shows("docs/guide/cron.md", "# Cron and periodic jobs", 1, here);
    readme_check::assert_shows("docs/guide/cron.md", "# Cron and periodic jobs", 2, here);
}
