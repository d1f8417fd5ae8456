use gator_core::job;

#[job(cron = "*/5 * * *")]
async fn four_fields() {}

#[job(cron = "*/5 * * * *")]
async fn with_args(user: u64, day: String) {
    let _ = (user, day);
}

#[job(cron = 5)]
async fn not_a_string() {}

#[job(cron = "* * * * *", cron = "@daily")]
async fn twice() {}

fn main() {}
