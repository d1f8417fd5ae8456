//! `cron = "*/5 * * * *"`: enqueue the job on a schedule, once per tick, across the fleet.

use super::JobOptions;
use super::values::{check_unset, string_value};
use crate::validate::JobFn;
use syn::ext::IdentExt;
use syn::{Ident, LitStr, Meta};

/// `cron = "*/5 * * * *"`.
pub(super) fn cron(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    // Also once refused: a second `cron` is a duplicate either way.
    check_unset(&options.cron_given.then_some(()), key)?;
    options.cron_given = true;
    let cron = string_value(meta, key, "*/5 * * * *")?;
    check_cron(&cron)?;
    options.cron = Some(cron);
    Ok(())
}

impl JobOptions {
    /// A `cron` job is enqueued with no arguments: refuses one whose fn takes any (besides
    /// `Context` and `State`, which the worker supplies).
    pub fn check_cron_args(&self, job: &JobFn) -> syn::Result<()> {
        let Some(cron) = &self.cron else {
            return Ok(());
        };
        if job.params.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = job
            .params
            .iter()
            .map(|p| format!("`{}`", p.ident.unraw()))
            .collect();
        Err(syn::Error::new(
            cron.span(),
            format!(
                "a `cron` job is enqueued with no arguments, but this one takes {}; remove them, \
                 or leave `cron` out and add the entry at run time with fixed arguments: \
                 `Admin::new(client).add_periodic(name, cron, tz, Job::call(..))`",
                names.join(", ")
            ),
        ))
    }
}

/// A first check of a cron expression, the shape the runtime checks too
/// ([`gator_rules::cron_shape`]): 5 fields (minute hour day-of-month month day-of-week), 6
/// (seconds first) or a nickname (`@daily`). The fields themselves are checked by the worker at
/// start (croner), which refuses to start with a bad one.
fn check_cron(cron: &LitStr) -> syn::Result<()> {
    let Err(fields) = gator_rules::cron_shape(&cron.value()) else {
        return Ok(());
    };
    Err(syn::Error::new(
        cron.span(),
        format!(
            "a cron expression has 5 fields (`*/5 * * * *`: minute hour day-of-month month \
             day-of-week) or 6 (a seconds field first: `*/10 * * * * *`), or is a nickname such \
             as `@daily`; this one has {fields}"
        ),
    ))
}
