//! The job type's own fns: `call`, `dispatch`, `dispatch_at`, `dispatch_in`, `dispatch_many`,
//! with doc comments that read well in the user's rustdoc.

use super::body::args_tuple;
use crate::validate::{JobFn, Param};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::ext::IdentExt;
use syn::{Ident, Visibility};

/// `impl SendEmail { call, dispatch, dispatch_at, dispatch_in, dispatch_many }`.
pub(super) fn inherent_impl(
    job: &JobFn,
    fn_name: &str,
    queue: &str,
    root: &TokenStream,
) -> TokenStream {
    let (item, params, type_ident) = (&job.item, &job.params, &job.type_ident);
    let vis = &item.vis;
    let fn_span = item.sig.ident.span();
    let idents: Vec<Ident> = params.iter().map(|p| p.ident.clone()).collect();
    let types: Vec<_> = params.iter().map(|p| &p.ty).collect();
    let args_value = args_tuple(&idents, fn_span);
    let (time, delay) = (fresh_ident("time", params), fresh_ident("delay", params));
    let Docs {
        call,
        dispatch,
        dispatch_at,
        dispatch_in,
        dispatch_many,
    } = Docs::new(fn_name, queue, params, &time, &delay);

    let many = many_fn(vis, params, &dispatch_many, root);

    quote! {
        // A job may only ever be dispatched from another crate, or by a worker's retry, so an
        // unused `dispatch` is no sign of dead code. `dispatch_at` takes one more parameter
        // than the job fn, which may already have many.
        #[allow(dead_code, clippy::too_many_arguments)]
        impl #type_ident {
            #[doc = #call]
            #vis fn call(#(#idents: #types),*) -> #root::PendingJob<Self> {
                #root::PendingJob::new(#args_value)
            }

            #[doc = #dispatch]
            #vis async fn dispatch(#(#idents: #types),*) -> #root::Result<::std::string::String> {
                Self::call(#(#idents),*).dispatch().await
            }

            #[doc = #dispatch_at]
            #vis async fn dispatch_at(
                #time: impl ::core::convert::Into<#root::DueTime>,
                #(#idents: #types),*
            ) -> #root::Result<::std::string::String> {
                Self::call(#(#idents),*).at(#time).dispatch().await
            }

            #[doc = #dispatch_in]
            #vis async fn dispatch_in(
                #delay: ::std::time::Duration,
                #(#idents: #types),*
            ) -> #root::Result<::std::string::String> {
                Self::call(#(#idents),*).after(#delay).dispatch().await
            }

            #many
        }
    }
}

/// `dispatch_many`: one job per item, in one round trip.
fn many_fn(vis: &Visibility, params: &[Param], doc: &str, root: &TokenStream) -> TokenStream {
    let (item_type, to_pending) = many_item(params, root);
    quote! {
        #[doc = #doc]
        #vis async fn dispatch_many(
            items: impl ::std::iter::IntoIterator<Item = #item_type>,
        ) -> #root::Result<::std::vec::Vec<::std::string::String>> {
            let jobs = ::std::iter::Iterator::map(::std::iter::IntoIterator::into_iter(items), #to_pending);
            #root::dispatch_many::<Self>(jobs).await
        }
    }
}

/// One item of `dispatch_many`: the arguments as a tuple, a bare value for one, `()` for none;
/// and the closure that makes a `PendingJob` of it.
fn many_item(params: &[Param], root: &TokenStream) -> (TokenStream, TokenStream) {
    let to_pending = quote!(|item| #root::PendingJob::new(<Self as #root::Job>::args_of(item)));
    match params {
        [] => (quote!(()), to_pending),
        [Param { ty, .. }] => (quote!(#ty), to_pending),
        _ => {
            let types = params.iter().map(|p| &p.ty);
            (quote!((#(#types),*)), to_pending)
        }
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
                " {job}{with_args}, not yet sent: the builder of its dispatch. Pick another queue \
                 with `.queue(..)`, a time with `.at(..)` or `.after(..)`, a client of your choice \
                 with `.through(&client)`, then `.dispatch()`."
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
