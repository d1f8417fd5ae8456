//! The options inside `#[job(...)]`, parsed into [`JobOptions`]: the macro's first stage.
//!
//! Each option is a `key = value` pair or a bare flag (`critical`), read by its own fn in the
//! file of its group, as [`OPTIONS`] lists them:
//!
//! - `names.rs`: `queue`, `name`;
//! - `retry.rs`: `retries`, `backoff`, `retry`, `timeout`;
//! - `flow.rs`: `priority`, `cost`, `critical`, `limit_key`, `rate`, `tz`, `no_overlap`,
//!   `overlap_key`, and `windows.rs`: `windows`;
//! - `unique.rs`: `unique_for`, `unique_until`, `debounce`;
//! - `schedule.rs`: `cron`;
//! - `expiry.rs`: `expires_in`, `on_expire`;
//! - `arg_keys.rs`: which argument `limit_key` and `overlap_key` name, once the fn is checked;
//! - `values.rs`: reading a value of each kind (a string, a number, a duration, a flag).
//!
//! To add an option (say `unique_for = "1h"`), give `JobOptions` a field, write its reader in
//! its group's file, and add both to [`OPTIONS`]. A rule the runtime checks too (a name, a
//! window, a duration, the priority range...) is gator-rules's: the reader calls it and words
//! the error for `#[job]`. A bad option is reported and skipped, so one attribute reports every
//! mistake at once.

mod arg_keys;
mod expiry;
mod flow;
mod names;
mod retry;
mod schedule;
mod unique;
mod values;
mod windows;

use crate::Errors;
use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Ident, LitStr, Meta, Path, Token};

/// Reads one option's value into the options: an error if it is bad or given twice.
type Reader = fn(&mut JobOptions, &Meta, &Ident) -> syn::Result<()>;

/// Every option, in the order errors list them, and the fn that reads it.
const OPTIONS: &[(&str, Reader)] = &[
    ("queue", names::queue),
    ("name", names::name),
    ("retries", retry::retries),
    ("backoff", retry::backoff),
    ("retry", retry::retry),
    ("timeout", retry::timeout),
    ("priority", flow::priority),
    ("cost", flow::cost),
    ("critical", flow::critical),
    ("limit_key", flow::limit_key),
    ("fair_key", flow::fair_key),
    ("rate", flow::rate),
    ("windows", windows::windows),
    ("tz", flow::tz),
    ("unique_for", unique::unique_for),
    ("unique_until", unique::unique_until),
    ("debounce", unique::debounce),
    ("cron", schedule::cron),
    ("no_overlap", flow::no_overlap),
    ("overlap_key", flow::overlap_key),
    ("expires_in", expiry::expires_in),
    ("on_expire", expiry::on_expire),
];

/// What `#[job(...)]` asked for; `None` means "use the default" (or the value was refused).
#[derive(Default)]
pub(crate) struct JobOptions {
    /// `queue = "high"`: the default queue; `"default"` if absent.
    pub queue: Option<LitStr>,
    /// `name = "images.resize"`: the wire name; the fn name if absent.
    pub name: Option<LitStr>,
    /// `retries = 5`: retries after the first attempt; Gator's default (25) if absent.
    pub retries: Option<u32>,
    /// `backoff = ["1s", "30s"]` or `backoff = my_backoff`: delays before retries.
    pub backoff: Option<Backoff>,
    /// `retry = my_strategy`: a retry strategy that sees the error.
    pub retry: Option<Path>,
    /// `timeout = "30s"`: how long one attempt may run, in ms.
    pub timeout_ms: Option<u64>,
    /// `priority = 10`: lower runs first on its queue (0 to 9999).
    pub priority: Option<u16>,
    /// `cost = 2`: units of the queue's concurrency limit the job takes.
    pub cost: Option<u32>,
    /// `critical`: runs outside the queue's concurrency limit.
    pub critical: Option<Span>,
    /// `limit_key = region`: the argument whose value is the job's limit key.
    pub limit_key: Option<Ident>,
    /// Which wire argument `limit_key` names (set once the fn is checked, see
    /// [`JobOptions::resolve_limit_key`]).
    pub limit_key_index: Option<usize>,
    /// `fair_key = tenant`: the argument whose value is the job's fair key.
    pub fair_key: Option<Ident>,
    /// Which wire argument `fair_key` names (set once the fn is checked, see
    /// [`JobOptions::resolve_fair_key`]).
    pub fair_key_index: Option<usize>,
    /// `rate = "email"`: the named rate limiter the job obeys.
    pub rate: Option<LitStr>,
    /// `windows = ["05:00-07:00"]`: the daily windows the job may start in.
    pub windows: Option<Vec<LitStr>>,
    /// `tz = "Europe/Berlin"`: the windows' time zone.
    pub tz: Option<LitStr>,
    /// Whether `windows` was given at all (even if refused), for the `tz` check.
    pub windows_given: bool,
    /// `unique_for = "10m"`: the unique lock's TTL, in ms.
    pub unique_for_ms: Option<u64>,
    /// `unique_until = "start"`: true for `start`, false for `success`.
    pub unique_until_start: Option<bool>,
    /// `debounce = "5s"`: the debounce delay, in ms.
    pub debounce_ms: Option<u64>,
    /// `cron = "*/5 * * * *"`: enqueue the job on this schedule (in `tz`), once per tick.
    pub cron: Option<LitStr>,
    /// Whether `cron` was given at all (even if refused), for the `tz` check.
    pub cron_given: bool,
    /// `no_overlap`: at most one job of the queue with the same overlap key runs at once.
    pub no_overlap: Option<Span>,
    /// `overlap_key = account`: the argument whose value is the overlap key (implies
    /// `no_overlap`); the wire name and all arguments if absent.
    pub overlap_key: Option<Ident>,
    /// Which wire argument `overlap_key` names (see [`JobOptions::resolve_overlap_key`]).
    pub overlap_key_index: Option<usize>,
    /// `expires_in = "10m"`: the job's time to live from its dispatch, in ms.
    pub expires_in_ms: Option<u64>,
    /// `on_expire = "drop"`: true to drop an expired job, false (`"dead"`) to keep it.
    pub on_expire_drop: Option<bool>,
    /// Where `on_expire` was written, for the check that it comes with `expires_in`.
    pub on_expire_span: Option<Span>,
}

/// The `backoff` option.
pub(crate) enum Backoff {
    /// Fixed delays in ms: retry n waits the n-th (the last one repeats).
    List(Vec<u64>),
    /// A `fn(u32) -> std::time::Duration` given the number of failures so far.
    Path(Path),
}

impl JobOptions {
    /// Parses the attribute's arguments. Each bad option is pushed to `errors` and skipped.
    pub fn parse(tokens: TokenStream, errors: &mut Errors) -> JobOptions {
        let mut options = JobOptions::default();
        match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens) {
            Ok(metas) => {
                for meta in metas {
                    if let Err(err) = options.set(&meta) {
                        errors.push(err);
                    }
                }
            }
            Err(err) => errors.push(err),
        }
        options.check_combinations(errors);
        options
    }

    /// The options that cannot go together, or only together.
    fn check_combinations(&self, errors: &mut Errors) {
        if let (Some(critical), true) = (
            self.critical,
            self.no_overlap.is_some() || self.overlap_key.is_some(),
        ) {
            errors.push(syn::Error::new(
                critical,
                "a `critical` job cannot be `no_overlap`: it runs outside the queue's parking, \
                 where the jobs waiting for the lock wait; leave one of the two out",
            ));
        }
        if let (Some(span), None) = (self.on_expire_span, self.expires_in_ms) {
            errors.push(syn::Error::new(
                span,
                "`on_expire` says what becomes of a job past its deadline: add `expires_in = \"10m\"`, or leave `on_expire` out",
            ));
        }
        if let (Some(tz), false) = (&self.tz, self.windows_given || self.cron_given) {
            errors.push(syn::Error::new(
                tz.span(),
                "`tz` is the time zone of `windows` or `cron`: add `windows = [\"05:00-07:00\"]` \
                 or `cron = \"0 9 * * *\"`, or leave `tz` out",
            ));
        }
    }

    /// Reads one option with the reader [`OPTIONS`] gives its key.
    fn set(&mut self, meta: &Meta) -> syn::Result<()> {
        let key = option_key(meta.path())?;
        match OPTIONS.iter().find(|(name, _)| key == *name) {
            Some((_, read)) => read(self, meta, &key),
            None => Err(syn::Error::new(
                key.span(),
                format!(
                    "unknown option `{key}`; valid options are {}",
                    valid_options()
                ),
            )),
        }
    }
}

fn valid_options() -> String {
    let quoted: Vec<String> = OPTIONS.iter().map(|(o, _)| format!("`{o}`")).collect();
    quoted.join(", ")
}

/// The option's name: a single identifier.
fn option_key(path: &Path) -> syn::Result<Ident> {
    match path.get_ident() {
        Some(ident) => Ok(ident.clone()),
        None => Err(syn::Error::new_spanned(
            path,
            format!("unknown option; valid options are {}", valid_options()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn every_bad_option_is_reported_and_the_good_ones_kept() {
        let mut errors = Errors::default();
        let options = JobOptions::parse(
            quote!(queue = "mail", retries = "5", name = 3, queue = "again"),
            &mut errors,
        );
        assert_eq!(errors.len(), 3);
        assert_eq!(options.queue.map(|q| q.value()).as_deref(), Some("mail"));
        assert!(options.name.is_none());
    }

    /// The options of `#[job(#tokens)]` and how many errors they got.
    pub(super) fn parse(tokens: TokenStream) -> (JobOptions, usize) {
        let mut errors = Errors::default();
        let options = JobOptions::parse(tokens, &mut errors);
        let count = errors.errors.map_or(0, |e| e.into_iter().count());
        (options, count)
    }
}
