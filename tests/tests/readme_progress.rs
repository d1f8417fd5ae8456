//! The README's "Progress and position" example compiles as shown: a job that reports its
//! progress, and a client reading it and a queued job's position. Nothing runs: the fns need
//! Redis and are never called.

#[path = "readme/check.rs"]
mod readme_check;

#[allow(dead_code, unused_variables)] // needs Redis; the variants' fields are there to show them
mod progress_and_position {
    use gator::{Client, Context, Position, job};

    #[rustfmt::skip] // the README shows the call on one line
    #[job(queue = "exports")]
    async fn export_rows(ctx: Context, rows: u64) -> gator::Result<()> {
        for row in 0..rows {
            ctx.progress(row as f64 / rows as f64, format!("row {row} of {rows}")).await?;
        }
        Ok(())
    }

    #[rustfmt::skip] // the README aligns its comments
    async fn read(client: Client, jid: String, waiting: String) -> gator::Result<()> {
        let progress = client.progress(&jid).await?; // Some(Progress { fraction, note, at, attempt })
        match client.position(&waiting).await? {
            Position::Queued { ahead, expected_start, .. } => {} // `ahead` jobs before it
            Position::Parked { place, .. } => {}                 // its key's jobs before it
            Position::Scheduled { at } => {}                     // joins its queue at `at`
            Position::NotWaiting { status } => {}                // running, done, unknown...
        }
        Ok(())
    }
}

#[test]
fn the_readme_shows_this_code() {
    let here = include_str!("readme_progress.rs");
    readme_check::assert_shows("docs/guide/status.md", "## Progress and position", 1, here);
}
