//! Generates the job type of a checked fn: a unit struct named after the fn, its
//! `::gator_core::Job` impl, its `inventory` registration, and the `call`/`dispatch` fns.
//!
//! Everything but the struct goes inside `const _: () = { ... };` so no helper name can clash
//! with the user's, and the runtime is named by absolute path (`::gator_core::...`) so the
//! user's imports cannot shadow it.

use crate::args::{Backoff, JobOptions};
use crate::validate::{Input, JobFn, Param};
use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, LitStr, ReturnType, Type};

/// The user's fn, unchanged, followed by its job type.
pub(crate) fn job(options: &JobOptions, job: &JobFn) -> TokenStream {
    let JobFn {
        item, type_ident, ..
    } = job;
    let vis = &item.vis;
    let fn_ident = &item.sig.ident;
    let fn_name = fn_ident.unraw().to_string();
    let name = match &options.name {
        Some(name) => name.clone(),
        // Not spanned at the fn name: rustdoc would show that source text, unquoted, as the value.
        None => LitStr::new(&fn_name, Span::call_site()),
    };
    let queue = match &options.queue {
        Some(queue) => queue.clone(),
        None => LitStr::new("default", Span::call_site()),
    };
    // A `#[cfg]` on the fn must also remove its job type, or the type would call a missing fn.
    let cfgs: Vec<_> = item
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("cfg"))
        .collect();

    let struct_doc = struct_doc(&fn_name, type_ident, &name.value(), &queue.value());
    let job_impl = job_impl(job, &name, &queue, policy(options));
    let inherent_impl = inherent_impl(job, &fn_name, &queue.value());
    let cron = cron_registration(options, type_ident);
    quote! {
        #item

        #(#cfgs)*
        #[doc = #struct_doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy)]
        // The worker runs a job through its registration, so the type counts as used even if
        // this crate never names it.
        #[allow(dead_code)]
        #vis struct #type_ident;

        #(#cfgs)*
        const _: () = {
            #job_impl
            #inherent_impl
            #cron
        };
    }
}

/// `impl Job` and the `inventory` registration that lets the worker find it by name.
fn job_impl(job: &JobFn, name: &LitStr, queue: &LitStr, policy: TokenStream) -> TokenStream {
    let JobFn {
        item,
        params,
        inputs,
        type_ident,
        ..
    } = job;
    let fn_ident = &item.sig.ident;
    let fn_span = fn_ident.span();
    let args_type = args_type(job);
    // Fresh names with mixed-site hygiene, so a parameter named like the fn
    // (`fn email(email: String)`) or like `args` cannot shadow the fn being called.
    let args = Ident::new("args", Span::mixed_site());
    let ctx = Ident::new("ctx", Span::mixed_site());
    let locals: Vec<Ident> = (0..params.len())
        .map(|i| format_ident!("arg{}", i, span = Span::mixed_site()))
        .collect();
    let args_pattern = args_tuple(&locals, fn_span);

    // Each `State<T>` is taken from the context before the call; a missing one was refused at
    // the worker's `build()`, so the error here only guards a hand-made registry.
    let mut take_states = Vec::new();
    let mut state_types = Vec::new();
    let mut call_args = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        match input {
            Input::Arg(index) => {
                let local = &locals[*index];
                call_args.push(quote!(#local));
            }
            Input::Context => call_args.push(quote!(#ctx)),
            Input::State(ty) => {
                let local = format_ident!("state{}", i, span = Span::mixed_site());
                let name = fn_ident.unraw().to_string();
                // Spanned at the type, so "`T: Clone` is not satisfied" points at the parameter.
                take_states.push(quote_spanned! {ty.span()=>
                    let #local = match ::gator_core::Context::state::<#ty>(&#ctx) {
                        ::core::option::Option::Some(value) => ::gator_core::State(value),
                        ::core::option::Option::None => {
                            return ::core::result::Result::Err(::gator_core::JobError::new(::std::format!(
                                "job {:?} takes `State<{}>`, which this worker was not given: add `.state(value)` to its builder",
                                #name, ::core::any::type_name::<#ty>()
                            )));
                        }
                    };
                });
                state_types.push(ty);
                call_args.push(quote!(#local));
            }
        }
    }
    let uses_ctx = inputs.iter().any(|i| !matches!(i, Input::Arg(_)));
    // A job that takes neither lets the context go before it runs.
    let drop_ctx = (!uses_ctx).then(|| quote!(::core::mem::drop(#ctx);));
    let states_const = (!state_types.is_empty()).then(|| {
        quote! {
            const STATES: &'static [::gator_core::StateNeed] =
                &[#(::gator_core::StateNeed::of::<#state_types>()),*];
        }
    });

    let call = quote!(#fn_ident(#(#call_args),*));
    let call = match item.sig.asyncness {
        Some(_) => quote!(#call.await),
        None => call,
    };
    let result = job_result(&item.sig.output, call);
    let result = quote!({ #(#take_states)* #result });
    let run = match item.sig.asyncness {
        Some(_) => quote_spanned! {fn_span=>
            ::gator_core::Execution::Async(::std::boxed::Box::pin(async move { #result }))
        },
        None => quote_spanned! {fn_span=>
            ::gator_core::Execution::Blocking(::std::boxed::Box::new(move || #result))
        },
    };
    let defined_at = format!("::{} at ", fn_ident.unraw());
    // Spanned at the fn name so `file!()`/`line!()` name the fn, not the attribute.
    let file = quote_spanned!(fn_span=> ::core::file!());
    let line = quote_spanned!(fn_span=> ::core::line!());

    quote! {
        impl ::gator_core::Job for #type_ident {
            type Args = #args_type;
            const NAME: &'static str = #name;
            const QUEUE: &'static str = #queue;
            #policy
            #states_const

            fn execute(#args: Self::Args, #ctx: ::gator_core::Context) -> ::gator_core::Execution {
                let #args_pattern = #args;
                #drop_ctx
                #run
            }
        }

        ::gator_core::__inventory::submit! {
            ::gator_core::JobRegistration::of::<#type_ident>(::core::concat!(
                ::core::module_path!(), #defined_at, #file, ":", #line
            ))
        }
    }
}

/// With `cron = ...`: the periodic entry's registration, which every worker publishes at start.
fn cron_registration(options: &JobOptions, type_ident: &Ident) -> Option<TokenStream> {
    let cron = options.cron.as_ref()?;
    let tz = match &options.tz {
        Some(tz) => quote!(::core::option::Option::Some(#tz)),
        None => quote!(::core::option::Option::None),
    };
    Some(quote! {
        ::gator_core::__inventory::submit! {
            ::gator_core::cron::CronRegistration {
                cron: #cron,
                tz: #tz,
                payload: ::gator_core::cron::payload_of::<#type_ident>,
            }
        }
    })
}

/// The retry and timeout items of `impl Job` that the options override.
fn policy(options: &JobOptions) -> TokenStream {
    let retries = options.retries.map(|n| quote!(const RETRIES: u32 = #n;));
    let timeout = options.timeout_ms.map(|ms| {
        quote!(const TIMEOUT: ::core::option::Option<::core::time::Duration> =
            ::core::option::Option::Some(::core::time::Duration::from_millis(#ms));)
    });
    let backoff = options.backoff.as_ref().map(|backoff| match backoff {
        Backoff::List(delays) => quote! {
            fn backoff(failures: u32) -> ::core::time::Duration {
                const DELAYS_MS: &[u64] = &[#(#delays),*];
                ::gator_core::retry::from_list(DELAYS_MS, failures)
            }
        },
        Backoff::Path(path) => quote_spanned! {path.span()=>
            fn backoff(failures: u32) -> ::core::time::Duration {
                #path(failures)
            }
        },
    });
    let retry = options.retry.as_ref().map(|path| {
        quote_spanned! {path.span()=>
            fn retry(
                failure: &::gator_core::retry::RetryContext<'_>,
            ) -> ::core::option::Option<::gator_core::retry::RetryDecision> {
                ::core::option::Option::Some(#path(failure))
            }
        }
    });
    let flow = flow_fn(options);
    let unique = unique_const(options);
    quote!(#retries #timeout #backoff #retry #flow #unique)
}

/// `fn flow(args)` of `impl Job`, only for a job with flow-control options: the options every
/// job of this type carries (a dispatch's builder methods override them).
/// `const UNIQUE` for `unique_for`, `unique_until` and `debounce`: any of them makes the job
/// unique (for the default TTL unless `unique_for` says).
fn unique_const(options: &JobOptions) -> Option<TokenStream> {
    if options.unique_for_ms.is_none()
        && options.unique_until_start.is_none()
        && options.debounce_ms.is_none()
    {
        return None;
    }
    let ttl = match options.unique_for_ms {
        Some(ms) => quote!(::core::time::Duration::from_millis(#ms)),
        None => quote!(::gator_core::unique::DEFAULT_UNIQUE_FOR),
    };
    let until = match options.unique_until_start {
        Some(true) => quote!(::gator_core::unique::UniqueUntil::Start),
        _ => quote!(::gator_core::unique::UniqueUntil::Success),
    };
    let debounce = match options.debounce_ms {
        Some(ms) => {
            quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#ms)))
        }
        None => quote!(::core::option::Option::None),
    };
    Some(quote! {
        const UNIQUE: ::core::option::Option<::gator_core::unique::UniqueOptions> =
            ::core::option::Option::Some(::gator_core::unique::UniqueOptions {
                ttl: #ttl,
                until: #until,
                debounce: #debounce,
            });
    })
}

fn flow_fn(options: &JobOptions) -> Option<TokenStream> {
    let has_flow = options.priority.is_some()
        || options.cost.is_some()
        || options.critical.is_some()
        || options.limit_key_index.is_some()
        || options.rate.is_some()
        || options.windows.is_some()
        || options.no_overlap.is_some()
        || options.overlap_key_index.is_some();
    if !has_flow {
        return None;
    }
    let args = Ident::new("args", Span::mixed_site());
    let flow = Ident::new("flow", Span::mixed_site());
    let priority = options
        .priority
        .map(|p| quote!(#flow.priority = ::core::option::Option::Some(#p);));
    let cost = options
        .cost
        .map(|c| quote!(#flow.cost = ::core::option::Option::Some(#c);));
    let critical = options.critical.map(|_| quote!(#flow.critical = true;));
    let key = options
        .limit_key
        .as_ref()
        .zip(options.limit_key_index)
        .map(|(name, index)| {
            let index = syn::Index::from(index);
            // Spanned at the name, so an argument type without `Display` (hence without
            // `ToString`) is reported with a label on `limit_key = name`.
            let to_string = quote_spanned! {name.span()=>
                ::std::string::ToString::to_string(&#args.#index)
            };
            quote!(#flow.key = ::core::option::Option::Some(#to_string);)
        });
    let rate = options.rate.as_ref().map(
        |rate| quote!(#flow.rate = ::core::option::Option::Some(::std::string::String::from(#rate));),
    );
    let windows = options.windows.as_ref().map(
        |windows| quote!(#flow.windows = ::std::vec![#(::std::string::String::from(#windows)),*];),
    );
    let tz = options.tz.as_ref().map(
        |tz| quote!(#flow.tz = ::core::option::Option::Some(::std::string::String::from(#tz));),
    );
    let overlap = match (&options.overlap_key, options.overlap_key_index) {
        (Some(name), Some(index)) => {
            let index = syn::Index::from(index);
            // Spanned at the name, as for `limit_key`.
            let to_string = quote_spanned! {name.span()=>
                ::std::string::ToString::to_string(&#args.#index)
            };
            Some(quote!(#flow.overlap = ::core::option::Option::Some(
                ::gator_core::flow::overlap::fit_key(#to_string)
            );))
        }
        _ => options.no_overlap.map(|_| {
            quote!(#flow.overlap = ::core::option::Option::Some(
                ::gator_core::flow::overlap::default_key(
                    <Self as ::gator_core::Job>::NAME,
                    #args,
                )
            );)
        }),
    };
    let use_args = match (options.limit_key_index, &overlap) {
        (None, None) => quote!(let _ = #args;),
        _ => quote!(),
    };
    Some(quote! {
        fn flow(#args: &Self::Args) -> ::gator_core::flow::FlowOptions {
            #use_args
            let mut #flow = ::gator_core::flow::FlowOptions::default();
            #priority #cost #critical #key #rate #windows #tz #overlap
            #flow
        }
    })
}

/// The job fn's return value as a `::gator_core::JobResult`.
fn job_result(output: &ReturnType, call: TokenStream) -> TokenStream {
    match output {
        ReturnType::Type(_, ty) if !is_unit(ty) => {
            // `output` is spanned at the return type, so "`X: IntoJobResult` is not satisfied"
            // (say an `E` without `Display`, or a `T` without `Serialize`) points there.
            let output = Ident::new("output", ty.span());
            quote_spanned! {ty.span()=> {
                let #output = #call;
                ::gator_core::IntoJobResult::into_job_result(#output)
            }}
        }
        // `()` needs no conversion; passing it to a fn would trip `clippy::unit_arg`.
        _ => quote! {{
            #call;
            ::gator_core::JobResult::Ok(::core::option::Option::None)
        }},
    }
}

fn is_unit(ty: &Type) -> bool {
    matches!(ty, Type::Tuple(tuple) if tuple.elems.is_empty())
}

/// `impl SendEmail { call, dispatch, dispatch_at, dispatch_in, dispatch_many }`.
fn inherent_impl(job: &JobFn, fn_name: &str, queue: &str) -> TokenStream {
    let JobFn {
        item,
        params,
        type_ident,
        ..
    } = job;
    let vis = &item.vis;
    let fn_span = item.sig.ident.span();
    let idents: Vec<Ident> = params.iter().map(|p| p.ident.clone()).collect();
    let types: Vec<_> = params.iter().map(|p| &p.ty).collect();
    let args_value = args_tuple(&idents, fn_span);
    let time = fresh_ident("time", params);
    let delay = fresh_ident("delay", params);
    let Docs {
        call,
        dispatch,
        dispatch_at,
        dispatch_in,
        dispatch_many,
    } = Docs::new(fn_name, queue, params, &time, &delay);

    // One item of `dispatch_many`: the arguments as a tuple, a bare value for one, `()` for none.
    let (item_type, to_pending) = match params.as_slice() {
        [] => (quote!(()), quote!(|()| ::gator_core::PendingJob::new([]))),
        [Param { ident, ty }] => (
            quote!(#ty),
            quote!(|#ident| ::gator_core::PendingJob::new((#ident,))),
        ),
        _ => (quote!((#(#types),*)), quote!(::gator_core::PendingJob::new)),
    };

    quote! {
        // A job may only ever be dispatched from another crate, or by a worker's retry, so an
        // unused `dispatch` is no sign of dead code. `dispatch_at` takes one more parameter
        // than the job fn, which may already have many.
        #[allow(dead_code, clippy::too_many_arguments)]
        impl #type_ident {
            #[doc = #call]
            #vis fn call(#(#idents: #types),*) -> ::gator_core::PendingJob<Self> {
                ::gator_core::PendingJob::new(#args_value)
            }

            #[doc = #dispatch]
            #vis async fn dispatch(#(#idents: #types),*) -> ::gator_core::Result<::std::string::String> {
                Self::call(#(#idents),*).dispatch().await
            }

            #[doc = #dispatch_at]
            #vis async fn dispatch_at(
                #time: impl ::core::convert::Into<::gator_core::DueTime>,
                #(#idents: #types),*
            ) -> ::gator_core::Result<::std::string::String> {
                Self::call(#(#idents),*).dispatch_at(#time).await
            }

            #[doc = #dispatch_in]
            #vis async fn dispatch_in(
                #delay: ::std::time::Duration,
                #(#idents: #types),*
            ) -> ::gator_core::Result<::std::string::String> {
                Self::call(#(#idents),*).dispatch_in(#delay).await
            }

            #[doc = #dispatch_many]
            #vis async fn dispatch_many(
                items: impl ::std::iter::IntoIterator<Item = #item_type>,
            ) -> ::gator_core::Result<::std::vec::Vec<::std::string::String>> {
                let jobs = ::std::iter::Iterator::map(::std::iter::IntoIterator::into_iter(items), #to_pending);
                ::gator_core::dispatch_many::<Self>(jobs).await
            }
        }
    }
}

/// `Job::Args`: `[(); 0]` for no parameters (JSON `[]`), `(T,)` for one, the tuple for more.
/// Spanned so that "`X: Serialize` is not satisfied" points at the parameter's type, or at
/// the parameter list when there are several (the compiler cannot say which one failed).
fn args_type(job: &JobFn) -> TokenStream {
    match job.params.as_slice() {
        [] => quote_spanned!(job.item.sig.ident.span()=> [(); 0]),
        [Param { ty, .. }] => quote_spanned!(ty.span()=> (#ty,)),
        params => {
            let types = params.iter().map(|p| &p.ty);
            let mut group = Group::new(Delimiter::Parenthesis, quote!(#(#types),*));
            group.set_span(job.item.sig.paren_token.span.join());
            group.into_token_stream()
        }
    }
}

/// The arguments as a value of `Job::Args` (or a pattern destructuring one): `[]`, `(a,)`,
/// `(a, b)`.
fn args_tuple(idents: &[Ident], span: Span) -> TokenStream {
    match idents {
        [] => quote_spanned!(span=> []),
        [ident] => quote_spanned!(span=> (#ident,)),
        _ => quote_spanned!(span=> (#(#idents),*)),
    }
}

/// `base`, or `base_`, `base__`... if a job parameter already has that name.
fn fresh_ident(base: &str, params: &[Param]) -> Ident {
    let mut name = base.to_owned();
    while params.iter().any(|p| p.ident.unraw() == name) {
        name.push('_');
    }
    Ident::new(&name, Span::call_site())
}

/// The doc comment of the job type.
fn struct_doc(fn_name: &str, type_ident: &Ident, name: &str, queue: &str) -> String {
    format!(
        " The `#[job]` type of [`{fn_name}`]: dispatch it with `{type_ident}::dispatch(..)`.\n\n \
         Wire name `{name:?}`, default queue `{queue:?}`. The worker finds the job by its wire \
         name, so keep that name while jobs of this type may be waiting in Redis."
    )
}

/// The doc comments of the `call`/`dispatch` fns, so they pass `missing_docs` and read well.
struct Docs {
    call: String,
    dispatch: String,
    dispatch_at: String,
    dispatch_in: String,
    dispatch_many: String,
}

impl Docs {
    fn new(fn_name: &str, queue: &str, params: &[Param], time: &Ident, delay: &Ident) -> Docs {
        let job = format!("[`{fn_name}`]");
        let with_args = if params.is_empty() {
            ""
        } else {
            " with these arguments"
        };
        let on_queue = format!("on its default queue `{queue:?}` through the default client");
        let each_item = match params {
            [] => "`()`".to_owned(),
            [param] => format!("the `{}` argument", param.ident.unraw()),
            _ => {
                let names: Vec<String> =
                    params.iter().map(|p| p.ident.unraw().to_string()).collect();
                format!("the arguments as a tuple `({})`", names.join(", "))
            }
        };
        Docs {
            call: format!(
                " {job}{with_args}, not yet sent: pick another queue with `.queue(..)`, \
                 or dispatch it later or through a client of your choice (`.dispatch_with(&client)`)."
            ),
            dispatch: format!(" Enqueues {job}{with_args} {on_queue}; returns the jid."),
            dispatch_at: format!(
                " Schedules {job}{with_args} to run at `{time}`, {on_queue}; returns the \
                 jid."
            ),
            dispatch_in: format!(
                " Schedules {job}{with_args} to run after `{delay}`, {on_queue}; returns \
                 the jid."
            ),
            dispatch_many: format!(
                " Enqueues one {job} per item in one round trip, {on_queue}; returns the jids. \
                 Each item is {each_item}."
            ),
        }
    }
}
