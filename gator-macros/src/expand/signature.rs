//! `const SIGNATURE` of `impl Job`: the wire parameters (name and type, as written) and the
//! flow options, for the job catalogue the workers publish.

use crate::args::JobOptions;
use crate::validate::JobFn;
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::ext::IdentExt;

pub(super) fn signature(options: &JobOptions, job: &JobFn, root: &TokenStream) -> TokenStream {
    let params = job.params.iter().map(|p| {
        let name = p.ident.unraw().to_string();
        let ty = type_text(&p.ty);
        quote!((#name, #ty))
    });
    let opt = |v: Option<TokenStream>| match v {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    };
    let priority = opt(options.priority.map(|p| quote!(#p)));
    let cost = opt(options.cost.map(|c| quote!(#c)));
    let critical = options.critical.is_some();
    let limit_key_arg = opt(options
        .limit_key
        .as_ref()
        .and(options.limit_key_index)
        .map(|i| quote!(#i)));
    let fair_key_arg = opt(options
        .fair_key
        .as_ref()
        .and(options.fair_key_index)
        .map(|i| quote!(#i)));
    let rate = opt(options.rate.as_ref().map(|r| quote!(#r)));
    let windows = options.windows.iter().flatten();
    let tz = opt(options.tz.as_ref().map(|t| quote!(#t)));
    let overlap = match (&options.overlap_key, options.overlap_key_index) {
        (Some(_), Some(i)) => quote!(#root::catalogue::Overlap::Arg(#i)),
        _ if options.no_overlap.is_some() => quote!(#root::catalogue::Overlap::Args),
        _ => quote!(#root::catalogue::Overlap::None),
    };
    let backoff = match &options.backoff {
        Some(crate::args::Backoff::List(delays)) => {
            quote!(#root::catalogue::Backoff::List(&[#(#delays),*]))
        }
        Some(crate::args::Backoff::Path(_)) => quote!(#root::catalogue::Backoff::Custom),
        None => quote!(#root::catalogue::Backoff::Default),
    };
    quote! {
        const SIGNATURE: #root::catalogue::Signature = #root::catalogue::Signature {
            params: ::core::option::Option::Some(&[#(#params),*]),
            priority: #priority,
            cost: #cost,
            critical: #critical,
            limit_key_arg: #limit_key_arg,
            fair_key_arg: #fair_key_arg,
            rate: #rate,
            windows: &[#(#windows),*],
            tz: #tz,
            overlap: #overlap,
            backoff: #backoff,
        };
    }
}

/// A type as its author wrote it, without the spaces tokens print with (`Option<String>`,
/// `HashMap<String, u32>`).
fn type_text(ty: &syn::Type) -> String {
    let compact: String = ty
        .to_token_stream()
        .to_string()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    compact.replace(',', ", ")
}
