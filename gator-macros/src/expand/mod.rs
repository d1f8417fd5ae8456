//! Generates the job type of a checked fn: a unit struct named after the fn, its `Job` impl,
//! its `inventory` registration, and the `call`/`dispatch` fns.
//!
//! Everything but the struct goes inside `const _: () = { ... };` so no helper name can clash
//! with the user's, and the runtime is named by absolute path (the `root`: `::gator_core`, or
//! `::gator::__private::core` from the facade) so the user's imports cannot shadow it. Every
//! runtime item, `inventory` included, is named through that root, so the user's crate needs no
//! dependency but the one it imported `#[job]` from.

mod body;
mod inherent;
mod policy;
mod signature;

use crate::args::JobOptions;
use crate::validate::JobFn;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::ext::IdentExt;
use syn::{Ident, LitStr};

/// The user's fn, unchanged, followed by its job type, which names the runtime as `root`.
pub(crate) fn job(options: &JobOptions, job: &JobFn, root: &TokenStream) -> TokenStream {
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
    let policy = policy::policy(options, root);
    let signature = signature::signature(options, job, root);
    let job_impl = body::job_impl(job, &name, &queue, quote!(#policy #signature), root);
    let inherent_impl = inherent::inherent_impl(job, &fn_name, &queue.value(), root);
    let cron = policy::cron_registration(options, type_ident, root);
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

/// `root` with every token spanned at `span`: inside `quote_spanned!`, so that a runtime path
/// points at the user's token as a literal `::gator_core` would, and a trait error is reported
/// on the user's type rather than on the attribute as well.
pub(super) fn root_at(root: &TokenStream, span: Span) -> TokenStream {
    root.clone()
        .into_iter()
        .map(|mut token| {
            token.set_span(span);
            token
        })
        .collect()
}

/// The doc comment of the job type.
fn struct_doc(fn_name: &str, type_ident: &Ident, name: &str, queue: &str) -> String {
    format!(
        " The `#[job]` type of [`{fn_name}`]: dispatch it with `{type_ident}::dispatch(..)`.\n\n \
         Wire name `{name:?}`, default queue `{queue:?}`. The worker finds the job by its wire \
         name, so keep that name while jobs of this type may be waiting in Redis."
    )
}
