use gator_core::job;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Region {
    name: String,
}

// The limit key is the argument's `to_string()`.
#[job(limit_key = region)]
async fn sync_region(region: Region) {
    let _ = region.name;
}

fn main() {}
