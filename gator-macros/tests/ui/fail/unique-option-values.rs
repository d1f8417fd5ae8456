use gator_core::job;

// Each unique option given a value it cannot take.
#[job(unique_for = "0s", unique_until = "finish", debounce = 5)]
async fn bad_values() {}

#[job(unique_until = start, unique_for)]
async fn wrong_kinds() {}

fn main() {}
