//! The options of `#[job(...)]` as items of `impl Job`: retries, timeout, backoff, the retry
//! hook, flow control, uniqueness; and the cron registration.

use super::root_at;
use crate::args::{Backoff, JobOptions};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

/// With `cron = ...`: the periodic entry's registration, which every worker publishes at start.
pub(super) fn cron_registration(
    options: &JobOptions,
    type_ident: &Ident,
    root: &TokenStream,
) -> Option<TokenStream> {
    let cron = options.cron.as_ref()?;
    let tz = match &options.tz {
        Some(tz) => quote!(::core::option::Option::Some(#tz)),
        None => quote!(::core::option::Option::None),
    };
    Some(quote! {
        #root::__inventory::submit! {
            #root::cron::CronRegistration {
                cron: #cron,
                tz: #tz,
                payload: #root::cron::payload_of::<#type_ident>,
            }
        }
    })
}

/// The retry and timeout items of `impl Job` that the options override.
pub(super) fn policy(options: &JobOptions, root: &TokenStream) -> TokenStream {
    let retries = options.retries.map(|n| quote!(const RETRIES: u32 = #n;));
    let timeout = options.timeout_ms.map(|ms| {
        quote!(const TIMEOUT: ::core::option::Option<::core::time::Duration> =
            ::core::option::Option::Some(::core::time::Duration::from_millis(#ms));)
    });
    let backoff = options.backoff.as_ref().map(|backoff| match backoff {
        Backoff::List(delays) => quote! {
            fn backoff(failures: u32) -> ::core::time::Duration {
                const DELAYS_MS: &[u64] = &[#(#delays),*];
                #root::retry::from_list(DELAYS_MS, failures)
            }
        },
        Backoff::Path(path) => quote_spanned! {path.span()=>
            fn backoff(failures: u32) -> ::core::time::Duration {
                #path(failures)
            }
        },
    });
    let retry = options.retry.as_ref().map(|path| {
        let root = root_at(root, path.span());
        quote_spanned! {path.span()=>
            fn retry(
                failure: &#root::retry::RetryContext<'_>,
            ) -> ::core::option::Option<#root::retry::RetryDecision> {
                ::core::option::Option::Some(#path(failure))
            }
        }
    });
    let flow = flow_fn(options, root);
    let unique = unique_const(options, root);
    let expiry = expiry_const(options, root);
    quote!(#retries #timeout #backoff #retry #flow #unique #expiry)
}

/// `const EXPIRY` for `expires_in` (and `on_expire`).
fn expiry_const(options: &JobOptions, root: &TokenStream) -> Option<TokenStream> {
    let ms = options.expires_in_ms?;
    let on_expire = match options.on_expire_drop {
        Some(true) => quote!(#root::expiry::OnExpire::Drop),
        _ => quote!(#root::expiry::OnExpire::Dead),
    };
    Some(quote! {
        const EXPIRY: ::core::option::Option<#root::expiry::Expiry> =
            ::core::option::Option::Some(#root::expiry::Expiry {
                deadline: #root::expiry::Deadline::In(::core::time::Duration::from_millis(#ms)),
                on_expire: #on_expire,
            });
    })
}

/// `const UNIQUE` for `unique_for`, `unique_until` and `debounce`: any of them makes the job
/// unique (for the default TTL unless `unique_for` says).
fn unique_const(options: &JobOptions, root: &TokenStream) -> Option<TokenStream> {
    if options.unique_for_ms.is_none()
        && options.unique_until_start.is_none()
        && options.debounce_ms.is_none()
    {
        return None;
    }
    let ttl = match options.unique_for_ms {
        Some(ms) => quote!(::core::time::Duration::from_millis(#ms)),
        None => quote!(#root::unique::DEFAULT_UNIQUE_FOR),
    };
    let until = match options.unique_until_start {
        Some(true) => quote!(#root::unique::UniqueUntil::Start),
        _ => quote!(#root::unique::UniqueUntil::Success),
    };
    let debounce = match options.debounce_ms {
        Some(ms) => {
            quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#ms)))
        }
        None => quote!(::core::option::Option::None),
    };
    Some(quote! {
        const UNIQUE: ::core::option::Option<#root::unique::UniqueOptions> =
            ::core::option::Option::Some(#root::unique::UniqueOptions {
                ttl: #ttl,
                until: #until,
                debounce: #debounce,
            });
    })
}

/// `fn flow(args)` of `impl Job`, only for a job with flow-control options: the options every
/// job of this type carries (a dispatch's builder methods override them).
fn flow_fn(options: &JobOptions, root: &TokenStream) -> Option<TokenStream> {
    let has_flow = options.priority.is_some()
        || options.cost.is_some()
        || options.critical.is_some()
        || options.limit_key_index.is_some()
        || options.fair_key_index.is_some()
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
    let key = arg_key(&options.limit_key, options.limit_key_index, &args)
        .map(|key| quote!(#flow.key = ::core::option::Option::Some(#key);));
    let fair = arg_key(&options.fair_key, options.fair_key_index, &args)
        .map(|key| quote!(#flow.fair = ::core::option::Option::Some(#key);));
    let rate = options.rate.as_ref().map(
        |rate| quote!(#flow.rate = ::core::option::Option::Some(::std::string::String::from(#rate));),
    );
    let windows = options.windows.as_ref().map(
        |windows| quote!(#flow.windows = ::std::vec![#(::std::string::String::from(#windows)),*];),
    );
    let tz = options.tz.as_ref().map(
        |tz| quote!(#flow.tz = ::core::option::Option::Some(::std::string::String::from(#tz));),
    );
    let overlap = overlap(options, &args, &flow, root);
    let use_args = match (&key, &fair, &overlap) {
        (None, None, None) => quote!(let _ = #args;),
        _ => quote!(),
    };
    Some(quote! {
        fn flow(#args: &Self::Args) -> #root::flow::FlowOptions {
            #use_args
            let mut #flow = #root::flow::FlowOptions::default();
            #priority #cost #critical #key #fair #rate #windows #tz #overlap
            #flow
        }
    })
}

/// The value of the argument an option names (`limit_key = region`), once it is found.
fn arg_key(name: &Option<Ident>, index: Option<usize>, args: &Ident) -> Option<TokenStream> {
    name.as_ref()
        .zip(index)
        .map(|(name, index)| arg_to_string(args, name.span(), index))
}

/// `args.N.to_string()`, spanned at the option's name, so an argument type without `Display`
/// (hence without `ToString`) is reported with a label on `limit_key = name`.
fn arg_to_string(args: &Ident, span: Span, index: usize) -> TokenStream {
    let index = syn::Index::from(index);
    quote_spanned! {span=>
        ::std::string::ToString::to_string(&#args.#index)
    }
}

/// The no-overlap key: an argument's value with `overlap_key`, the job's name and arguments
/// with `no_overlap`.
fn overlap(
    options: &JobOptions,
    args: &Ident,
    flow: &Ident,
    root: &TokenStream,
) -> Option<TokenStream> {
    match (&options.overlap_key, options.overlap_key_index) {
        (Some(name), Some(index)) => {
            let to_string = arg_to_string(args, name.span(), index);
            Some(quote!(#flow.overlap = ::core::option::Option::Some(
                #root::flow::overlap::fit_key(#to_string)
            );))
        }
        _ => options.no_overlap.map(|_| {
            quote!(#flow.overlap = ::core::option::Option::Some(
                #root::flow::overlap::default_key(
                    <Self as #root::Job>::NAME,
                    #args,
                )
            );)
        }),
    }
}
