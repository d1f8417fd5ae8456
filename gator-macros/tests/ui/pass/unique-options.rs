//! Every unique option, alone and together, in a crate that denies warnings: the generated
//! `const UNIQUE` must type-check and warn about nothing, and carry what was written.
#![deny(warnings, missing_docs)]

use gator_core::unique::{UniqueOptions, UniqueUntil};
use gator_core::{Job, job};
use std::time::Duration;

/// Unique for ten minutes, until it starts, debounced by five seconds.
#[job(unique_for = "10m", unique_until = "start", debounce = "5s")]
pub async fn reindex(doc: u64) {
    let _ = doc;
}

/// Unique for an hour, until it succeeds (the default).
#[job(unique_for = "1h")]
pub fn nightly() {}

/// Only debounced: unique for the default TTL.
#[job(debounce = "250ms")]
pub fn save_draft(text: String) {
    let _ = text;
}

fn main() {
    assert_eq!(
        Reindex::UNIQUE,
        Some(UniqueOptions {
            ttl: Duration::from_secs(600),
            until: UniqueUntil::Start,
            debounce: Some(Duration::from_secs(5)),
        })
    );
    assert_eq!(Nightly::UNIQUE, Some(UniqueOptions::new(Duration::from_secs(3600))));
    assert_eq!(
        SaveDraft::UNIQUE.and_then(|u| u.debounce),
        Some(Duration::from_millis(250))
    );
}
