//! The `#[job]` attribute of Gator: turns a fn into a job you dispatch from anywhere and a
//! worker runs. Use it as `gator_core::job`; everything is documented on [`macro@job`].
//!
//! The macro runs in three stages, one file each: `args` parses the options (one reader per
//! option, grouped in `args/`), `validate` checks the fn, `expand` generates the job type. The
//! rules the runtime checks too (names, time windows, durations, priority and cost) come from
//! gator-rules, so both sides refuse the same values.

// A published crate: every public item is documented (the workspace only warns).
#![deny(missing_docs)]

mod args;
mod expand;
mod validate;

use proc_macro::TokenStream;
use quote::quote;

/// Turns a fn into a Gator job: a type named after the fn that you dispatch, and that the
/// worker finds by name and runs.
///
/// ```no_run
/// use gator_core::job;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// pub struct Order {
///     pub id: u64,
///     pub cents: u64,
/// }
///
/// /// Charges an order. An `Err` is a failure that is retried with backoff.
/// #[job(queue = "high")]
/// pub async fn charge_card(order: Order, attempt_key: String) -> Result<(), std::io::Error> {
///     println!("charging order {} ({attempt_key})", order.id);
///     Ok(())
/// }
///
/// /// A plain fn: CPU-bound work runs on a blocking thread of the worker.
/// #[job(name = "images.resize")]
/// pub fn resize_image(path: String, width: u32) {
///     println!("resizing {path} to {width}px");
/// }
///
/// # async fn demo() -> gator_core::Result<()> {
/// // Anywhere in the app (connects to GATOR_REDIS_URL, default redis://127.0.0.1:6379):
/// let order = Order { id: 7, cents: 1999 };
/// let jid = ChargeCard::dispatch(order, "k-7".into()).await?;
/// ResizeImage::dispatch_in(std::time::Duration::from_secs(60), "cat.png".into(), 320).await?;
/// ResizeImage::call("dog.png".into(), 640).queue("bulk").dispatch().await?;
/// ResizeImage::dispatch_many(vec![("a.png".into(), 64), ("b.png".into(), 64)]).await?;
/// # let _ = jid; Ok(()) }
/// ```
///
/// Linking the crate is enough for a worker to know its jobs: there is no registration step.
///
/// # Options
///
/// | option | default | meaning |
/// |---|---|---|
/// | `queue = "high"` | `"default"` | The queue a dispatch goes to unless the call picks another with `.queue(..)`. 1 to 128 characters from `A-Z a-z 0-9 _ - .`, checked at compile time. |
/// | `name = "images.resize"` | the fn name, e.g. `"resize_image"` | The wire name stored in each job and used by the worker to find the fn. Set it to rename or move the fn without breaking jobs already waiting in Redis. Must be unique in the worker binary. |
/// | `retries = 5` | 25 | Retries after the first attempt; `0` sends a failure straight to the dead set. |
/// | `backoff = ["10s", "1m"]` or `backoff = my_fn` | Sidekiq's curve | The delays before each retry (the last one repeats), or a `fn(u32) -> Duration` given the failures so far. |
/// | `retry = my_strategy` | none | A `fn(&gator_core::retry::RetryContext) -> gator_core::retry::RetryDecision` that sees the error (typed, through `JobError::downcast_ref`), the failures so far and the job, and decides: retry in a duration or at a time, the dead set, or discard. It replaces `retries` and `backoff` for that job. |
/// | `timeout = "30s"` | none | How long one attempt may run before it fails. An async job is cancelled; a sync job's thread runs on with its result ignored. |
/// | `priority = 10` | 100 | Flow control: lower runs first on its queue (0 to 9999). |
/// | `cost = 2` | 1 | Flow control: units of the queue's concurrency limit (and places in its rate limiters) the job takes; 1 or more. |
/// | `critical` | off | Flow control, a bare flag: runs outside the queue's concurrency limit, before its other jobs. |
/// | `limit_key = region` | none | Flow control: the wire argument (by name; not a `Context` or `State` parameter) whose value, by `ToString`, is the job's limit key, for per-key shares. |
/// | `rate = "email"` | none | Flow control: the named rate limiter the job obeys (1 to 128 bytes that show as themselves: no control, format, default-ignorable or blank-looking character); its rate is set in Redis. |
/// | `windows = ["05:00-07:00"]` | any time | Flow control: the daily windows the job may start in, `HH:MM-HH:MM` (00:00 to 24:00, 24:00 only as an end; across midnight if the end comes first). |
/// | `tz = "Europe/Berlin"` | UTC | The IANA time zone of `windows` and `cron` (only with one of them; the zone is checked at dispatch, and by the worker at start for `cron`). |
/// | `cron = "*/5 * * * *"` | none | A periodic job: enqueued on this schedule (5 fields, or 6 with seconds first; `@daily`...) in `tz`, once per tick across all workers. Only for a job without arguments; the expression is checked by the worker at start. See `gator_core::cron`. |
/// | `no_overlap` | off | Flow control, a bare flag: at most one job of the queue with the same overlap key runs at once; the others wait parked. The key is the wire name and the arguments as canonical JSON (see `gator_core::flow::overlap`). Not with `critical`. |
/// | `overlap_key = account` | wire name + arguments | Flow control: the wire argument whose value, by `ToString`, is the overlap key (implies `no_overlap`); a key over 128 bytes is stored as its digest. |
///
/// Options are separated by commas, in any order, each at most once:
/// `#[job(queue = "mail", name = "mail.welcome", retries = 3, timeout = "30s")]`.
///
/// The flow-control options are the defaults of every job of the type; a dispatch overrides
/// them with the builder's methods (`.priority(n)`, `.cost(n)`, `.limit_key(k)`...). A job
/// without any keeps the trait's default `Job::flow` (no flow options):
///
/// ```no_run
/// use gator_core::job;
///
/// /// Keyed by region (for per-region shares), through the "partner" rate limiter, at night.
/// #[job(queue = "partner", priority = 10, cost = 2, limit_key = region, rate = "partner",
///       windows = ["22:00-06:00"], tz = "Europe/Berlin")]
/// pub async fn sync_region(region: String, batch: u64) {
///     println!("syncing batch {batch} of {region}");
/// }
/// ```
///
/// # The fn
///
/// - **Plain `fn` or `async fn`.** The worker runs an `async fn` as a task, and a plain `fn`
///   on a blocking thread so CPU-bound or blocking work never stalls the other jobs.
/// - **Parameters** are the job's arguments, stored as a JSON array in Redis: any number
///   (zero included) of plain names with owned types that implement `Serialize` and
///   `DeserializeOwned` and are `Send + 'static`. Take `String`, not `&str`; `Vec<T>`, not
///   `&[T]`; and destructure tuples in the body, not in the parameter list.
/// - **Context and state.** Besides its arguments, the fn may take, in any position,
///   `ctx: gator_core::Context` (at most one: the attempt's jid, attempt number, queue, times,
///   chain and cancellation) and any number of `State(x): gator_core::State<T>` (a value the
///   worker was given with `.state(value)`; `T: Clone + Send + Sync + 'static`). Neither is a
///   wire argument: `call` and `dispatch` take only the others. They are recognised by their
///   type's name (`Context`, `State<..>`), so a wire argument's type cannot be named either.
///   A worker lacking a `State<T>` that one of its jobs takes refuses to build.
/// - **Return type:** `()` (nothing can fail), or `Result<T, E>` with `T: Serialize` and
///   `E: Display` (e.g. `anyhow::Result<()>`, `std::io::Result<Receipt>`). An `Ok` value is the
///   job's result, kept with its status (`Client::result`). An `Err` fails this attempt: it is retried
///   with backoff, unless it is a `gator_core::JobError::discard(..)`, which goes straight to
///   the dead set. A panic is a failure too.
/// - **Not allowed:** generics or `where` clauses (the worker must know the concrete types to
///   decode the arguments), `self` (put the job in a free fn), `const`, `unsafe`, `extern`
///   and variadic fns.
///
/// The fn itself is left unchanged, so it can still be called directly, e.g. in unit tests.
///
/// # What it generates
///
/// For `#[job(queue = "mail")] pub async fn send_email(to: String, n: u32) -> Result<(), E>`:
///
/// ```text
/// /// The `#[job]` type of [`send_email`]: dispatch it with `SendEmail::dispatch(..)`.
/// pub struct SendEmail; // the fn name in UpperCamelCase, with the fn's visibility
///
/// impl gator_core::Job for SendEmail {
///     type Args = (String, u32); // `(T,)` for one parameter, `[(); 0]` for none: always a JSON array
///     type Item = (String, u32); // as callers write them: `T` for one parameter, `()` for none
///     fn args_of(item: Self::Item) -> Self::Args { item }
///     fn item_of(args: Self::Args) -> Self::Item { args }
///     const NAME: &'static str = "send_email";
///     const QUEUE: &'static str = "mail";
///     // Only for the options given: `RETRIES`, `TIMEOUT` and `fn backoff(..)` override the
///     // trait's defaults (25, none, Sidekiq's curve).
///     // Only with flow-control options: `fn flow(args: &Self::Args) -> FlowOptions`, the
///     // options given (`limit_key = to` sets `key: Some(args.0.to_string())`).
///     // Only with `State<T>` parameters: the types the worker must be given.
///     // const STATES: &'static [gator_core::StateNeed] = &[StateNeed::of::<T>()];
///     fn execute(args: Self::Args, ctx: gator_core::Context) -> gator_core::Execution {
///         /* calls send_email(to, n), passing ctx and states where the fn takes them */
///     }
/// }
/// // ...and a registration of `SendEmail` with `inventory`, which the worker reads.
///
/// impl SendEmail {
///     /// The job with its arguments, not yet sent: `.queue("other")`, `.through(&client).dispatch()`.
///     pub fn call(to: String, n: u32) -> gator_core::PendingJob<Self>;
///     /// Enqueues now through the default client; returns the jid.
///     pub async fn dispatch(to: String, n: u32) -> gator_core::Result<String>;
///     /// Schedules it to run at `time`.
///     pub async fn dispatch_at(time: impl Into<DueTime>, to: String, n: u32) -> gator_core::Result<String>;
///     /// Schedules it to run after `delay`.
///     pub async fn dispatch_in(delay: Duration, to: String, n: u32) -> gator_core::Result<String>;
///     /// Enqueues one job per item in one round trip. An item is the arguments as a tuple,
///     /// `(String, u32)` here; the bare value for a one-parameter job; `()` for none.
///     pub async fn dispatch_many(
///         items: impl IntoIterator<Item = (String, u32)>,
///     ) -> gator_core::Result<Vec<String>>;
/// }
/// ```
///
/// Every generated item is documented, so crates with `#![deny(missing_docs)]` can use
/// `#[job]`. The generated code names the runtime as `::gator_core`, so the crate must depend
/// on `gator-core` under that name; the `gator` crate's `gator::job` names it through `gator`
/// instead, so an app that depends on `gator` needs nothing else. A `#[cfg(..)]` on the fn applies to its job type too.
///
/// # Compile errors
///
/// Each mistake is reported on the token that causes it, all at once, and says what to write
/// instead; for example:
///
/// ```text
/// error: job arguments are stored as JSON and must be owned: use `String` instead of `&str`
///  --> src/jobs.rs:4:19
///   |
/// 4 | fn send_email(to: &str) {
///   |                   ^^^^
/// ```
///
/// An argument type without `Serialize` or `Deserialize` is reported on that parameter's type
/// (on the parameter list when the job has several), and a return type that is not `()` or
/// `Result<(), E: Display>` on the return type.
#[proc_macro_attribute]
pub fn job(args: TokenStream, item: TokenStream) -> TokenStream {
    job_impl(args.into(), item.into(), &quote!(::gator_core)).into()
}

/// `#[job]` as the `gator` facade re-exports it: the same attribute, but the generated code
/// names the runtime through the facade (`::gator::__private::core`), so an app that depends
/// only on `gator` compiles without `gator-core` under its own name.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn job_in_gator(args: TokenStream, item: TokenStream) -> TokenStream {
    job_impl(args.into(), item.into(), &quote!(::gator::__private::core)).into()
}

/// 1. parse the options, 2. check the fn, 3. generate; reporting every problem at once.
///
/// The generated code names the runtime crate as `root`.
fn job_impl(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
    root: &proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let mut errors = Errors::default();
    let mut options = args::JobOptions::parse(args, &mut errors);
    let job_fn = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(parsed) => validate::job_fn(parsed, &mut errors),
        Err(err) => {
            errors.push(err);
            None
        }
    };
    if let Some(job_fn) = &job_fn {
        // The options that name the fn's arguments, checked once the fn is.
        let checks: [fn(&mut args::JobOptions, &validate::JobFn) -> syn::Result<()>; 4] = [
            args::JobOptions::resolve_limit_key,
            args::JobOptions::resolve_fair_key,
            |options, job_fn| options.check_cron_args(job_fn),
            args::JobOptions::resolve_overlap_key,
        ];
        for check in checks {
            if let Err(err) = check(&mut options, job_fn) {
                errors.push(err);
            }
        }
    }
    let errors = errors.to_compile_errors();
    match job_fn {
        // A bad option falls back to its default, so the job type still exists and code that
        // uses it does not add errors of its own.
        Some(job_fn) => {
            let generated = expand::job(&options, &job_fn, root);
            quote!(#generated #errors)
        }
        // The fn cannot be a job: emit it unchanged, as tokio-macros does, so the only errors
        // are ours and not a cascade from half-generated code.
        None => quote!(#item #errors),
    }
}

/// Every error found so far, reported together (as serde's `Ctxt` does).
#[derive(Default)]
pub(crate) struct Errors {
    errors: Option<syn::Error>,
    count: usize,
}

impl Errors {
    pub fn push(&mut self, err: syn::Error) {
        self.count += 1;
        match &mut self.errors {
            Some(errors) => errors.combine(err),
            None => self.errors = Some(err),
        }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    fn to_compile_errors(&self) -> proc_macro2::TokenStream {
        self.errors
            .as_ref()
            .map(syn::Error::to_compile_error)
            .unwrap_or_default()
    }
}
