use gator_core::job;

#[job(expires_in = "0s")]
async fn expires_at_once() {}

#[job(expires_in = "soon")]
async fn not_a_duration() {}

#[job(expires_in = "6years")]
async fn past_the_horizon() {}

#[job(expires_in = "10m", on_expire = "keep")]
async fn unknown_fate() {}

#[job(on_expire = "drop")]
async fn fate_without_a_deadline() {}

fn main() {}
