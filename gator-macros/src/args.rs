//! The options inside `#[job(...)]`, parsed into [`JobOptions`].
//!
//! Each option is a `key = value` pair or a bare flag (`critical`). To add one (say
//! `unique_for = "1h"`), give `JobOptions` a field, add the key to [`OPTIONS`], and add an arm
//! to `JobOptions::set` that reads and checks the value. A bad option is reported and
//! skipped, so one attribute reports every mistake at once.

use crate::Errors;
use crate::validate::{Input, JobFn};
use gator_rules::{CostError, DEFAULT_PRIORITY, MAX_FLOW_NAME, MAX_PRIORITY};
use proc_macro2::Span;
use proc_macro2::TokenStream;
use syn::ext::IdentExt;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, FnArg, Ident, Lit, LitStr, Meta, Pat, Path, Token};

/// Every option, in the order errors list them.
const OPTIONS: &[&str] = &[
    "queue",
    "name",
    "retries",
    "backoff",
    "retry",
    "timeout",
    "priority",
    "cost",
    "critical",
    "limit_key",
    "rate",
    "windows",
    "tz",
    "unique_for",
    "unique_until",
    "debounce",
    "cron",
    "no_overlap",
    "overlap_key",
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
        if let (Some(critical), true) = (
            options.critical,
            options.no_overlap.is_some() || options.overlap_key.is_some(),
        ) {
            errors.push(syn::Error::new(
                critical,
                "a `critical` job cannot be `no_overlap`: it runs outside the queue's parking, \
                 where the jobs waiting for the lock wait; leave one of the two out",
            ));
        }
        if let (Some(tz), false) = (&options.tz, options.windows_given || options.cron_given) {
            errors.push(syn::Error::new(
                tz.span(),
                "`tz` is the time zone of `windows` or `cron`: add `windows = [\"05:00-07:00\"]` \
                 or `cron = \"0 9 * * *\"`, or leave `tz` out",
            ));
        }
        options
    }

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
                 `client.add_periodic(name, cron, tz, Job::call(..))`",
                names.join(", ")
            ),
        ))
    }

    /// Finds the wire argument `limit_key` names among the job fn's arguments (its
    /// parameters other than `Context` and `State`); an error if there is none.
    pub fn resolve_limit_key(&mut self, job: &JobFn) -> syn::Result<()> {
        if let Some(key) = &self.limit_key {
            self.limit_key_index = Some(arg_index(job, "limit_key", key)?);
        }
        Ok(())
    }

    /// Finds the wire argument `overlap_key` names, as [`JobOptions::resolve_limit_key`] does.
    pub fn resolve_overlap_key(&mut self, job: &JobFn) -> syn::Result<()> {
        if let Some(key) = &self.overlap_key {
            self.overlap_key_index = Some(arg_index(job, "overlap_key", key)?);
        }
        Ok(())
    }

    fn set(&mut self, meta: &Meta) -> syn::Result<()> {
        let key = option_key(meta.path())?;
        match key.to_string().as_str() {
            "queue" => {
                check_unset(&self.queue, &key)?;
                let queue = string_value(meta, &key, "high")?;
                check_queue_name(&queue)?;
                self.queue = Some(queue);
            }
            "name" => {
                check_unset(&self.name, &key)?;
                let name = string_value(meta, &key, "images.resize")?;
                if let Err(problem) = gator_rules::job_name(&name.value()) {
                    return Err(syn::Error::new(
                        name.span(),
                        format!(
                            "invalid job name {:?}: it {problem}; write a wire name like \
                             `name = \"images.resize\"`, or leave `name` out to use the fn name",
                            name.value()
                        ),
                    ));
                }
                self.name = Some(name);
            }
            "retries" => {
                check_unset(&self.retries, &key)?;
                self.retries = Some(retries_value(meta, &key)?);
            }
            "backoff" => {
                check_unset(&self.backoff, &key)?;
                self.backoff = Some(backoff_value(meta, &key)?);
            }
            "retry" => {
                check_unset(&self.retry, &key)?;
                self.retry = Some(strategy_value(meta, &key)?);
            }
            "timeout" => {
                check_unset(&self.timeout_ms, &key)?;
                let lit = string_value(meta, &key, "30s")?;
                let ms =
                    parse_duration_ms(&lit.value()).map_err(|e| syn::Error::new(lit.span(), e))?;
                if ms == 0 {
                    return Err(syn::Error::new(
                        lit.span(),
                        "a timeout of zero would fail every attempt",
                    ));
                }
                self.timeout_ms = Some(ms);
            }
            "priority" => {
                check_unset(&self.priority, &key)?;
                let (n, span) = int_value(
                    meta,
                    &key,
                    "a priority from 0 (first) to 9999, as in `priority = 10`",
                )?;
                match gator_rules::priority(n) {
                    Some(p) => self.priority = Some(p),
                    None => {
                        return Err(syn::Error::new(
                            span,
                            format!(
                                "priority {n} is too high: a priority is from 0 (runs first) to \
                                 {MAX_PRIORITY}; the default is {DEFAULT_PRIORITY}"
                            ),
                        ));
                    }
                }
            }
            "cost" => {
                check_unset(&self.cost, &key)?;
                let (n, span) =
                    int_value(meta, &key, "a cost of 1 or more units, as in `cost = 2`")?;
                match gator_rules::cost(n) {
                    Err(CostError::Zero) => {
                        return Err(syn::Error::new(
                            span,
                            "a cost of 0 would take no part of the limit: a cost is 1 or more \
                             units; for a job that runs outside the limit write `critical`",
                        ));
                    }
                    Ok(c) => self.cost = Some(c),
                    Err(CostError::TooHigh) => {
                        return Err(syn::Error::new(
                            span,
                            format!("cost {n} is too high: a cost is from 1 to {}", u32::MAX),
                        ));
                    }
                }
            }
            "critical" => {
                check_unset(&self.critical, &key)?;
                if !matches!(meta, Meta::Path(_)) {
                    return Err(syn::Error::new_spanned(
                        meta,
                        "`critical` takes no value: write `#[job(critical)]`",
                    ));
                }
                self.critical = Some(key.span());
            }
            "limit_key" => {
                check_unset(&self.limit_key, &key)?;
                let expected = "the name of one of the job's arguments, as in `limit_key = region`";
                match meta {
                    Meta::NameValue(nv) => match &nv.value {
                        Expr::Path(path) if path.path.get_ident().is_some() => {
                            self.limit_key = path.path.get_ident().cloned();
                        }
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(name),
                            ..
                        }) => {
                            return Err(syn::Error::new(
                                name.span(),
                                format!(
                                    "`limit_key` names an argument, not a string: write it without \
                                     quotes, as in `limit_key = {}`",
                                    syn::parse_str::<Ident>(&name.value())
                                        .map_or("region".to_owned(), |i| i.to_string())
                                ),
                            ));
                        }
                        other => {
                            return Err(syn::Error::new_spanned(
                                other,
                                format!("expected {expected}"),
                            ));
                        }
                    },
                    _ => {
                        return Err(syn::Error::new(
                            key.span(),
                            format!("`limit_key` needs {expected}"),
                        ));
                    }
                }
            }
            "rate" => {
                check_unset(&self.rate, &key)?;
                let rate = string_value(meta, &key, "email")?;
                if let Err(problem) = gator_rules::flow_name(&rate.value()) {
                    return Err(syn::Error::new(
                        rate.span(),
                        format!(
                            "invalid rate limiter name: it {problem}; a name is 1 to \
                             {MAX_FLOW_NAME} bytes without control characters, as in \
                             `rate = \"email\"` (its rate is set in Redis: \
                             `gator-worker queue rate QUEUE 100/1s --limiter NAME`)"
                        ),
                    ));
                }
                self.rate = Some(rate);
            }
            "windows" => {
                // Also once refused: a second `windows` is a duplicate either way.
                check_unset(&self.windows_given.then_some(()), &key)?;
                self.windows_given = true;
                self.windows = Some(windows_value(meta, &key)?);
            }
            "unique_for" | "debounce" => {
                let (field, example, zero) = if key == "unique_for" {
                    (
                        &mut self.unique_for_ms,
                        "10m",
                        "a unique lock that lasts no time would let every duplicate through",
                    )
                } else {
                    (
                        &mut self.debounce_ms,
                        "5s",
                        "a debounce of zero waits for nothing: leave `debounce` out",
                    )
                };
                check_unset(field, &key)?;
                let lit = string_value(meta, &key, example)?;
                let ms =
                    parse_duration_ms(&lit.value()).map_err(|e| syn::Error::new(lit.span(), e))?;
                if ms == 0 {
                    return Err(syn::Error::new(lit.span(), zero));
                }
                *field = Some(ms);
            }
            "unique_until" => {
                check_unset(&self.unique_until_start, &key)?;
                let lit = string_value(meta, &key, "start")?;
                self.unique_until_start = Some(match lit.value().as_str() {
                    "start" => true,
                    "success" => false,
                    other => {
                        return Err(syn::Error::new(
                            lit.span(),
                            format!(
                                "`unique_until = {other:?}` is not a moment the lock can end: \
                                 write `unique_until = \"start\"` or `\"success\"` (the default)"
                            ),
                        ));
                    }
                });
            }
            "tz" => {
                check_unset(&self.tz, &key)?;
                let tz = string_value(meta, &key, "Europe/Berlin")?;
                if tz.value().trim().is_empty() {
                    return Err(syn::Error::new(
                        tz.span(),
                        "the time zone is empty: write an IANA zone such as `tz = \"Europe/Berlin\"`",
                    ));
                }
                self.tz = Some(tz);
            }
            "cron" => {
                // Also once refused: a second `cron` is a duplicate either way.
                check_unset(&self.cron_given.then_some(()), &key)?;
                self.cron_given = true;
                let cron = string_value(meta, &key, "*/5 * * * *")?;
                check_cron(&cron)?;
                self.cron = Some(cron);
            }
            "no_overlap" => {
                check_unset(&self.no_overlap, &key)?;
                if !matches!(meta, Meta::Path(_)) {
                    return Err(syn::Error::new_spanned(
                        meta,
                        "`no_overlap` takes no value: write `#[job(no_overlap)]`, and \
                         `overlap_key = account` to key by one argument",
                    ));
                }
                self.no_overlap = Some(key.span());
            }
            "overlap_key" => {
                check_unset(&self.overlap_key, &key)?;
                self.overlap_key = Some(arg_name_value(meta, &key, "account")?);
            }
            _ => {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "unknown option `{key}`; valid options are {}",
                        valid_options()
                    ),
                ));
            }
        }
        Ok(())
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

/// The index among the job fn's wire arguments (its parameters other than `Context` and
/// `State`) of the one `key` names, for option `option`; an error if there is none.
fn arg_index(job: &JobFn, option: &str, key: &Ident) -> syn::Result<usize> {
    let params = &job.params;
    if let Some(index) = params.iter().position(|p| p.ident.unraw() == key.unraw()) {
        return Ok(index);
    }
    let names: Vec<String> = params
        .iter()
        .map(|p| format!("`{}`", p.ident.unraw()))
        .collect();
    let instead = if names.is_empty() {
        format!(
            "the job takes no argument to key by: leave `{option}` out (a dispatch can still \
             set a key with `.{option}(..)`)"
        )
    } else {
        format!("name one of its arguments: {}", names.join(", "))
    };
    // A `Context` or `State` parameter has a name too, but comes from the worker: it is
    // not stored with the job, so the queue cannot read a key from it.
    let message = match worker_param_named(job, key) {
        Some(kind) => format!(
            "`{option} = {key}` names the job's {kind} parameter, which the worker supplies \
             and is not stored with the job; {instead}"
        ),
        None => format!("`{option} = {key}` names no argument of the job; {instead}"),
    };
    Err(syn::Error::new(key.span(), message))
}

/// The value of an option that names one of the job's arguments (`overlap_key = account`).
fn arg_name_value(meta: &Meta, key: &Ident, example: &str) -> syn::Result<Ident> {
    let expected = format!("the name of one of the job's arguments, as in `{key} = {example}`");
    let Meta::NameValue(nv) = meta else {
        return Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs {expected}"),
        ));
    };
    match &nv.value {
        Expr::Path(path) if path.path.get_ident().is_some() => {
            // Checked just above: the path is one identifier.
            Ok(path.path.get_ident().cloned().expect("an identifier"))
        }
        Expr::Lit(ExprLit {
            lit: Lit::Str(name),
            ..
        }) => Err(syn::Error::new(
            name.span(),
            format!(
                "`{key}` names an argument, not a string: write it without quotes, as in \
                 `{key} = {}`",
                syn::parse_str::<Ident>(&name.value())
                    .map_or(example.to_owned(), |i| i.to_string())
            ),
        )),
        other => Err(syn::Error::new_spanned(
            other,
            format!("expected {expected}"),
        )),
    }
}

/// What the `Context` or `State<T>` parameter that binds `name` is, as in "`Context`", if
/// one does.
fn worker_param_named(job: &JobFn, name: &Ident) -> Option<&'static str> {
    // A checked fn has one input per parameter, in order.
    let typed = job.item.sig.inputs.iter().filter_map(|arg| match arg {
        FnArg::Typed(arg) => Some(arg),
        FnArg::Receiver(_) => None,
    });
    typed.zip(&job.inputs).find_map(|(arg, input)| {
        let kind = match input {
            Input::Arg(_) => return None,
            Input::Context => "`Context`",
            Input::State(_) => "`State`",
        };
        binds(&arg.pat, name).then_some(kind)
    })
}

/// Whether pattern `pat` binds `name` (`ctx`, `State(db)`, `State((a, b))`...).
fn binds(pat: &Pat, name: &Ident) -> bool {
    match pat {
        Pat::Ident(pat) => {
            pat.ident.unraw() == name.unraw()
                || pat.subpat.as_ref().is_some_and(|(_, sub)| binds(sub, name))
        }
        Pat::TupleStruct(pat) => pat.elems.iter().any(|p| binds(p, name)),
        Pat::Tuple(pat) => pat.elems.iter().any(|p| binds(p, name)),
        Pat::Struct(pat) => pat.fields.iter().any(|f| binds(&f.pat, name)),
        Pat::Paren(pat) => binds(&pat.pat, name),
        Pat::Reference(pat) => binds(&pat.pat, name),
        Pat::Type(pat) => binds(&pat.pat, name),
        _ => false,
    }
}

fn valid_options() -> String {
    let quoted: Vec<String> = OPTIONS.iter().map(|o| format!("`{o}`")).collect();
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

fn check_unset<T>(slot: &Option<T>, key: &Ident) -> syn::Result<()> {
    match slot {
        Some(_) => Err(syn::Error::new(
            key.span(),
            format!("duplicate option `{key}`: give it once"),
        )),
        None => Ok(()),
    }
}

/// The value of `key = "..."`; `example` is a sensible value to show in the error.
fn string_value(meta: &Meta, key: &Ident, example: &str) -> syn::Result<LitStr> {
    let expected = format!("`{key} = \"{example}\"`");
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) => Ok(lit.clone()),
            other => Err(syn::Error::new_spanned(
                other,
                format!("expected a string literal, as in {expected}"),
            )),
        },
        Meta::Path(_) => Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs a value: write {expected}"),
        )),
        Meta::List(_) => Err(syn::Error::new_spanned(meta, format!("write {expected}"))),
    }
}

/// The value of `key = N`, a whole number, and its span; `expected` says what to write.
fn int_value(meta: &Meta, key: &Ident, expected: &str) -> syn::Result<(u64, Span)> {
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Int(int), ..
            }) => match int.base10_parse::<u64>() {
                Ok(n) => Ok((n, int.span())),
                Err(_) => Err(syn::Error::new(int.span(), format!("expected {expected}"))),
            },
            other => Err(syn::Error::new_spanned(
                other,
                format!("expected {expected}"),
            )),
        },
        _ => Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs {expected}"),
        )),
    }
}

/// The value of `windows = ["05:00-07:00", ...]`, each window checked by the rule the
/// runtime applies too ([`gator_rules::window`]).
fn windows_value(meta: &Meta, key: &Ident) -> syn::Result<Vec<LitStr>> {
    let expected = "a list of daily windows, as in `windows = [\"05:00-07:00\", \"22:00-02:00\"]`";
    let Meta::NameValue(nv) = meta else {
        return Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs {expected}"),
        ));
    };
    let Expr::Array(array) = &nv.value else {
        return Err(syn::Error::new_spanned(
            &nv.value,
            format!("expected {expected}"),
        ));
    };
    if array.elems.is_empty() {
        return Err(syn::Error::new_spanned(
            array,
            format!("no window given: expected {expected}"),
        ));
    }
    let mut windows = Vec::new();
    let mut errors: Option<syn::Error> = None;
    let mut refuse = |err: syn::Error| match &mut errors {
        Some(errors) => errors.combine(err),
        None => errors = Some(err),
    };
    for elem in &array.elems {
        let Expr::Lit(ExprLit {
            lit: Lit::Str(window),
            ..
        }) = elem
        else {
            refuse(syn::Error::new_spanned(
                elem,
                "expected a window such as \"05:00-07:00\"",
            ));
            continue;
        };
        match gator_rules::window(&window.value()) {
            Ok(_) => windows.push(window.clone()),
            Err(e) => refuse(syn::Error::new(window.span(), e)),
        }
    }
    match errors {
        Some(errors) => Err(errors),
        None => Ok(windows),
    }
}

/// The value of `retries = N`.
fn retries_value(meta: &Meta, key: &Ident) -> syn::Result<u32> {
    let expected =
        "a whole number, as in `retries = 5` (0 sends a failed job straight to the dead set)";
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Int(int), ..
            }) => int
                .base10_parse::<u32>()
                .map_err(|_| syn::Error::new(int.span(), format!("expected {expected}"))),
            other => Err(syn::Error::new_spanned(
                other,
                format!("expected {expected}"),
            )),
        },
        _ => Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs {expected}"),
        )),
    }
}

/// The value of `retry = path::to_fn`.
fn strategy_value(meta: &Meta, key: &Ident) -> syn::Result<Path> {
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Path(path) if path.qself.is_none() => Ok(path.path.clone()),
            other => Err(syn::Error::new_spanned(
                other,
                "`retry` needs the path of a `fn(&gator_core::retry::RetryContext) -> \
                 gator_core::retry::RetryDecision`",
            )),
        },
        _ => Err(syn::Error::new(
            key.span(),
            "`retry` needs the path of a `fn(&gator_core::retry::RetryContext) -> \
             gator_core::retry::RetryDecision`, as in `retry = my_strategy`",
        )),
    }
}

/// The value of `backoff = [...]` (delays) or `backoff = path::to_fn`.
fn backoff_value(meta: &Meta, key: &Ident) -> syn::Result<Backoff> {
    let expected = "a list of delays, as in `backoff = [\"1s\", \"30s\", \"5m\"]`, or the path of a \
                    `fn(u32) -> std::time::Duration` that gets the number of failures so far";
    let Meta::NameValue(nv) = meta else {
        return Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs {expected}"),
        ));
    };
    match &nv.value {
        Expr::Path(path) if path.qself.is_none() => Ok(Backoff::Path(path.path.clone())),
        Expr::Array(array) if !array.elems.is_empty() => {
            let mut delays = Vec::new();
            for elem in &array.elems {
                let ms = match elem {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(s), ..
                    }) => {
                        parse_duration_ms(&s.value()).map_err(|e| syn::Error::new(s.span(), e))?
                    }
                    Expr::Lit(ExprLit {
                        lit: Lit::Int(i), ..
                    }) => i
                        .base10_parse::<u64>()
                        .map_err(|e| syn::Error::new(i.span(), e))?
                        .saturating_mul(1000),
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            "expected a delay such as \"30s\" or a number of seconds",
                        ));
                    }
                };
                delays.push(ms);
            }
            Ok(Backoff::List(delays))
        }
        other => Err(syn::Error::new_spanned(
            other,
            format!("expected {expected}"),
        )),
    }
}

/// Parses a duration as the command line and the runtime do ([`gator_rules::parse_duration`]:
/// `250ms`, `30s`, `1m30s`, `2h`, `1day`) into milliseconds.
pub(crate) fn parse_duration_ms(text: &str) -> Result<u64, String> {
    gator_rules::parse_duration(text.trim())
        .map(gator_rules::millis)
        .map_err(|e| {
            format!(
                "{text:?} is not a duration ({e}): write it as on the command line, as in \"250ms\", \"30s\", \"1m30s\" or \"2h\""
            )
        })
}

/// The rule `gator_core::store::keys::validate_queue` applies too ([`gator_rules::queue_name`]),
/// checked at compile time so a typo is not found by the first dispatch.
fn check_queue_name(lit: &LitStr) -> syn::Result<()> {
    let name = lit.value();
    gator_rules::queue_name(&name).map_err(|problem| {
        syn::Error::new(
            lit.span(),
            format!(
                "invalid queue name {name:?}: it {problem}; use 1 to 128 characters from A-Z a-z \
                 0-9 _ - . (no braces, colons or spaces; not . or ..)"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::Span;
    use quote::quote;

    fn queue_ok(name: &str) -> bool {
        check_queue_name(&LitStr::new(name, Span::call_site())).is_ok()
    }

    #[test]
    fn queue_names_follow_the_runtime_rule() {
        assert!(queue_ok("default") && queue_ok("mail.high-2_x"));
        assert!(queue_ok(&"q".repeat(128)));
        assert!(!queue_ok(&"q".repeat(129)));
        assert!(!queue_ok("") && !queue_ok("a b") && !queue_ok("{tag}") && !queue_ok("a:b"));
        assert!(!queue_ok("café"));
    }

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
    fn parse(tokens: TokenStream) -> (JobOptions, usize) {
        let mut errors = Errors::default();
        let options = JobOptions::parse(tokens, &mut errors);
        let count = errors.errors.map_or(0, |e| e.into_iter().count());
        (options, count)
    }

    #[test]
    fn flow_options_are_read() {
        let (options, errors) = parse(quote!(
            priority = 0,
            cost = 3,
            critical,
            limit_key = region,
            rate = "email",
            windows = ["05:00-07:00", "22:00-02:00"],
            tz = "Europe/Berlin"
        ));
        assert_eq!(errors, 0);
        assert_eq!(options.priority, Some(0));
        assert_eq!(options.cost, Some(3));
        assert!(options.critical.is_some());
        assert_eq!(
            options.limit_key.map(|k| k.to_string()).as_deref(),
            Some("region")
        );
        assert_eq!(options.rate.map(|r| r.value()).as_deref(), Some("email"));
        let windows: Vec<String> = options
            .windows
            .unwrap_or_default()
            .iter()
            .map(LitStr::value)
            .collect();
        assert_eq!(windows, ["05:00-07:00", "22:00-02:00"]);
        assert_eq!(
            options.tz.map(|tz| tz.value()).as_deref(),
            Some("Europe/Berlin")
        );
        let (options, errors) = parse(quote!(priority = 9999, cost = 4294967295));
        assert_eq!(
            (errors, options.priority, options.cost),
            (0, Some(9999), Some(u32::MAX))
        );
    }

    #[test]
    fn bad_flow_options_are_each_refused() {
        let long = "r".repeat(129);
        let cases = [
            quote!(priority = 10000),
            quote!(priority = -1),
            quote!(priority = "10"),
            quote!(priority),
            quote!(cost = 0),
            quote!(cost = 4294967296),
            quote!(cost = 1.5),
            quote!(critical = true),
            quote!(critical(yes)),
            quote!(limit_key = "region"),
            quote!(limit_key = args.region),
            quote!(limit_key),
            quote!(rate = ""),
            quote!(rate = #long),
            quote!(rate = "a\tb"),
            quote!(rate = email),
            quote!(windows = []),
            quote!(windows = "05:00-07:00"),
            quote!(windows = [5]),
            quote!(windows = ["05:00-07:00"], windows = ["08:00-09:00"]),
            quote!(tz = "UTC"),
            quote!(windows = ["05:00-07:00"], tz = ""),
            quote!(windows = ["05:00-07:00"], tz = Berlin),
            quote!(critical, critical),
            quote!(no_overlap = true),
            quote!(no_overlap, no_overlap),
            quote!(overlap_key = "account"),
            quote!(overlap_key = args.account),
            quote!(overlap_key),
            quote!(critical, no_overlap),
            quote!(critical, overlap_key = account),
        ];
        for tokens in cases {
            assert_eq!(parse(tokens.clone()).1, 1, "{tokens}");
        }
        // Each bad window is reported, and a refused `windows` still excuses `tz`.
        assert_eq!(
            parse(quote!(windows = ["5-7", "05:00-05:00", 9], tz = "UTC")).1,
            3
        );
        let (options, errors) = parse(quote!(rate = #long, cost = 2));
        assert_eq!(
            (errors, options.rate.is_none(), options.cost),
            (1, true, Some(2))
        );
        let just_long_enough = "é".repeat(64);
        assert_eq!(parse(quote!(rate = #just_long_enough)).1, 0);
    }

    #[test]
    fn unique_options_are_read() {
        let (options, errors) = parse(quote!(
            unique_for = "10m",
            unique_until = "start",
            debounce = "5s"
        ));
        assert_eq!(errors, 0);
        assert_eq!(options.unique_for_ms, Some(600_000));
        assert_eq!(options.unique_until_start, Some(true));
        assert_eq!(options.debounce_ms, Some(5_000));
        let (options, errors) = parse(quote!(unique_until = "success"));
        assert_eq!((errors, options.unique_until_start), (0, Some(false)));
    }

    #[test]
    fn bad_unique_options_are_each_refused() {
        let cases = [
            quote!(unique_for = "0s"),
            quote!(unique_for = "10"),
            quote!(unique_for = 600),
            quote!(unique_for),
            quote!(unique_until = "finish"),
            quote!(unique_until = start),
            quote!(debounce = "0ms"),
            quote!(debounce = "soon"),
            quote!(unique_for = "1m", unique_for = "2m"),
        ];
        for tokens in cases {
            assert_eq!(parse(tokens.clone()).1, 1, "{tokens}");
        }
    }

    /// `fn #item` checked as `#[job]` would, and the `limit_key` error it gets, if any.
    fn limit_key_error(key: TokenStream, item: TokenStream) -> Option<String> {
        let mut errors = Errors::default();
        let mut options = JobOptions::parse(quote!(limit_key = #key), &mut errors);
        let job = crate::validate::job_fn(syn::parse2(item).unwrap(), &mut errors).unwrap();
        assert_eq!(errors.len(), 0);
        match options.resolve_limit_key(&job) {
            Ok(()) => {
                assert!(options.limit_key_index.is_some());
                None
            }
            Err(err) => {
                assert!(options.limit_key_index.is_none());
                Some(err.to_string())
            }
        }
    }

    #[test]
    fn the_limit_key_is_a_wire_argument_by_name() {
        let item = quote! {
            async fn sync(
                ctx: Context,
                State(db): State<Db>,
                batch: u64,
                r#type: String,
                _: State<u8>,
            ) {}
        };
        let index = |key: TokenStream| {
            let mut errors = Errors::default();
            let mut options = JobOptions::parse(quote!(limit_key = #key), &mut errors);
            let job =
                crate::validate::job_fn(syn::parse2(item.clone()).unwrap(), &mut errors).unwrap();
            options
                .resolve_limit_key(&job)
                .map(|()| options.limit_key_index)
        };
        // The index among the wire arguments: `Context` and `State` are not among them.
        assert_eq!(index(quote!(batch)).unwrap(), Some(0));
        assert_eq!(index(quote!(r#type)).unwrap(), Some(1));

        let err = limit_key_error(quote!(ctx), item.clone()).unwrap();
        assert!(err.contains("`Context` parameter"), "{err}");
        assert!(err.contains("`batch`, `type`"), "{err}");
        let err = limit_key_error(quote!(db), item.clone()).unwrap();
        assert!(err.contains("`State` parameter"), "{err}");
        let err = limit_key_error(quote!(regoin), item).unwrap();
        assert!(err.contains("names no argument of the job"), "{err}");
        let err = limit_key_error(
            quote!(region),
            quote!(
                fn tick(ctx: Context) {}
            ),
        )
        .unwrap();
        assert!(err.contains("no argument to key by"), "{err}");
        assert_eq!(
            limit_key_error(
                quote!(n),
                quote!(
                    fn one(n: u32) {}
                )
            ),
            None
        );
    }

    #[test]
    fn no_overlap_and_its_key_are_read() {
        let (options, errors) = parse(quote!(no_overlap));
        assert_eq!(errors, 0);
        assert!(options.no_overlap.is_some() && options.overlap_key.is_none());
        let (options, errors) = parse(quote!(no_overlap, overlap_key = account));
        assert_eq!(errors, 0);
        assert_eq!(
            options.overlap_key.map(|k| k.to_string()).as_deref(),
            Some("account")
        );
        let err = |item: TokenStream| {
            let mut errors = Errors::default();
            let mut options = JobOptions::parse(quote!(overlap_key = account), &mut errors);
            let job = crate::validate::job_fn(syn::parse2(item).unwrap(), &mut errors).unwrap();
            options
                .resolve_overlap_key(&job)
                .map(|()| options.overlap_key_index)
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            err(quote!(
                fn f(day: u32, account: String) {}
            )),
            Ok(Some(1))
        );
        let message = err(quote!(
            fn f(ctx: Context) {}
        ))
        .unwrap_err();
        assert!(message.contains("`.overlap_key(..)`"), "{message}");
        let message = err(quote!(
            fn f(acount: String) {}
        ))
        .unwrap_err();
        assert!(
            message.contains("`overlap_key = account` names no argument"),
            "{message}"
        );
    }
}
