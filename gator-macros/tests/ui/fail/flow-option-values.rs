use gator_core::job;

// Each flow option given the wrong kind of value.
#[job(priority = "10", cost = 1.5, limit_key = "region", rate = email)]
async fn wrong_kinds(region: String) {
    let _ = region;
}

#[job(priority, cost, limit_key, rate, windows, tz)]
async fn no_values() {}

#[job(priority = -1, cost = 4294967296, critical(yes), limit_key = args.region)]
async fn out_of_range(region: String) {
    let _ = region;
}

#[job(
    rate = "limiter-limiter-limiter-limiter-limiter-limiter-limiter-limiter-\
            limiter-limiter-limiter-limiter-limiter-limiter-limiter-limiter-limiter",
    cost = 2
)]
async fn long_rate() {}

#[job(rate = "tab\there")]
async fn control_char_rate() {}

#[job(critical, priority = 1, critical, priority = 2)]
async fn duplicates() {}

fn main() {}
