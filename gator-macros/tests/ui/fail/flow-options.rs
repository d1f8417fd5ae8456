use gator_core::job;

#[job(priority = 10000, cost = 0, critical = true, rate = "")]
async fn bad_flow(region: String) {
    let _ = region;
}

#[job(limit_key = regoin)]
async fn misspelt_key(region: String) {
    let _ = region;
}

#[job(windows = ["5-7", "05:00-05:00", "25:00-26:00"], tz = "Europe/Berlin")]
async fn bad_windows() {}

#[job(tz = "UTC")]
async fn tz_alone() {}

fn main() {}
