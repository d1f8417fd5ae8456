//! `impl Job` for the job type: its `execute`, which takes the arguments and states apart and
//! calls the user's fn, and the `inventory` registration.

use super::root_at;
use crate::validate::{Input, JobFn, Param};
use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, LitStr, ReturnType, Type};

/// The fresh names `execute` binds, with mixed-site hygiene, so a parameter named like the fn
/// (`fn email(email: String)`) or like `args` cannot shadow the fn being called.
struct Names {
    args: Ident,
    ctx: Ident,
    locals: Vec<Ident>,
}

/// What the call needs: a statement per `State<T>` that takes it from the context, the state
/// types (for `Job::STATES`), and the call's arguments in the fn's order.
struct Inputs<'a> {
    take_states: Vec<TokenStream>,
    state_types: Vec<&'a Type>,
    call_args: Vec<TokenStream>,
}

/// `impl Job` and the `inventory` registration that lets the worker find it by name.
pub(super) fn job_impl(
    job: &JobFn,
    name: &LitStr,
    queue: &LitStr,
    policy: TokenStream,
    root: &TokenStream,
) -> TokenStream {
    let type_ident = &job.type_ident;
    let fn_ident = &job.item.sig.ident;
    let args_type = args_type(job);
    let items = item_fns(job);
    let names = Names {
        args: Ident::new("args", Span::mixed_site()),
        ctx: Ident::new("ctx", Span::mixed_site()),
        locals: (0..job.params.len())
            .map(|i| format_ident!("arg{}", i, span = Span::mixed_site()))
            .collect(),
    };
    let Names { args, ctx, locals } = &names;
    let args_pattern = args_tuple(locals, fn_ident.span());
    let inputs = inputs(job, &names, root);
    let state_types = &inputs.state_types;
    // A job that takes neither context nor state lets the context go before it runs.
    let uses_ctx = job.inputs.iter().any(|i| !matches!(i, Input::Arg(_)));
    let drop_ctx = (!uses_ctx).then(|| quote!(::core::mem::drop(#ctx);));
    let states_const = (!state_types.is_empty()).then(|| {
        quote! {
            const STATES: &'static [#root::StateNeed] =
                &[#(#root::StateNeed::of::<#state_types>()),*];
        }
    });
    let run = execution(job, &inputs, root);
    let registration = registration(job, root);
    quote! {
        impl #root::Job for #type_ident {
            type Args = #args_type;
            #items
            const NAME: &'static str = #name;
            const QUEUE: &'static str = #queue;
            #policy
            #states_const

            fn execute(#args: Self::Args, #ctx: #root::Context) -> #root::Execution {
                let #args_pattern = #args;
                #drop_ctx
                #run
            }
        }

        #registration
    }
}

/// Each `State<T>` is taken from the context before the call; a missing one was refused at
/// the worker's `build()`, so the error here only guards a hand-made registry.
fn inputs<'a>(job: &'a JobFn, names: &Names, root: &TokenStream) -> Inputs<'a> {
    let fn_ident = &job.item.sig.ident;
    let ctx = &names.ctx;
    let mut inputs = Inputs {
        take_states: Vec::new(),
        state_types: Vec::new(),
        call_args: Vec::new(),
    };
    for (i, input) in job.inputs.iter().enumerate() {
        match input {
            Input::Arg(index) => {
                let local = &names.locals[*index];
                inputs.call_args.push(quote!(#local));
            }
            Input::Context => inputs.call_args.push(quote!(#ctx)),
            Input::State(ty) => {
                let local = format_ident!("state{}", i, span = Span::mixed_site());
                let name = fn_ident.unraw().to_string();
                // Spanned at the type, so "`T: Clone` is not satisfied" points at the parameter.
                let root = root_at(root, ty.span());
                inputs.take_states.push(quote_spanned! {ty.span()=>
                    let #local = match #root::Context::state::<#ty>(&#ctx) {
                        ::core::option::Option::Some(value) => #root::State(value),
                        ::core::option::Option::None => {
                            return ::core::result::Result::Err(#root::JobError::new(::std::format!(
                                "job {:?} takes `State<{}>`, which this worker was not given: add `.state(value)` to its builder",
                                #name, ::core::any::type_name::<#ty>()
                            )));
                        }
                    };
                });
                inputs.state_types.push(ty);
                inputs.call_args.push(quote!(#local));
            }
        }
    }
    inputs
}

/// The `Execution` of one run: the states taken, the call, its result converted; boxed as a
/// future for an async fn, as a closure for a blocking thread otherwise.
fn execution(job: &JobFn, inputs: &Inputs, root: &TokenStream) -> TokenStream {
    let fn_ident = &job.item.sig.ident;
    let fn_span = fn_ident.span();
    let call_args = &inputs.call_args;
    let take_states = &inputs.take_states;
    let call = quote!(#fn_ident(#(#call_args),*));
    let call = match job.item.sig.asyncness {
        Some(_) => quote!(#call.await),
        None => call,
    };
    let result = job_result(&job.item.sig.output, call, root);
    let result = quote!({ #(#take_states)* #result });
    let root = root_at(root, fn_span);
    match job.item.sig.asyncness {
        Some(_) => quote_spanned! {fn_span=>
            #root::Execution::Async(::std::boxed::Box::pin(async move { #result }))
        },
        None => quote_spanned! {fn_span=>
            #root::Execution::Blocking(::std::boxed::Box::new(move || #result))
        },
    }
}

/// The `inventory` registration, which says where the fn is defined.
fn registration(job: &JobFn, root: &TokenStream) -> TokenStream {
    let type_ident = &job.type_ident;
    let fn_ident = &job.item.sig.ident;
    let fn_span = fn_ident.span();
    let defined_at = format!("::{} at ", fn_ident.unraw());
    // Spanned at the fn name so `file!()`/`line!()` name the fn, not the attribute.
    let file = quote_spanned!(fn_span=> ::core::file!());
    let line = quote_spanned!(fn_span=> ::core::line!());
    quote! {
        #root::__inventory::submit! {
            #root::JobRegistration::of::<#type_ident>(::core::concat!(
                ::core::module_path!(), #defined_at, #file, ":", #line
            ))
        }
    }
}

/// The job fn's return value as a `JobResult`.
fn job_result(output: &ReturnType, call: TokenStream, root: &TokenStream) -> TokenStream {
    match output {
        ReturnType::Type(_, ty) if !is_unit(ty) => {
            // `output` is spanned at the return type, so "`X: IntoJobResult` is not satisfied"
            // (say an `E` without `Display`, or a `T` without `Serialize`) points there.
            let output = Ident::new("output", ty.span());
            let root = root_at(root, ty.span());
            quote_spanned! {ty.span()=> {
                let #output = #call;
                #root::IntoJobResult::into_job_result(#output)
            }}
        }
        // `()` needs no conversion; passing it to a fn would trip `clippy::unit_arg`.
        _ => quote! {{
            #call;
            #root::JobResult::Ok(::core::option::Option::None)
        }},
    }
}

fn is_unit(ty: &Type) -> bool {
    matches!(ty, Type::Tuple(tuple) if tuple.elems.is_empty())
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
pub(super) fn args_tuple(idents: &[Ident], span: Span) -> TokenStream {
    match idents {
        [] => quote_spanned!(span=> []),
        [ident] => quote_spanned!(span=> (#ident,)),
        _ => quote_spanned!(span=> (#(#idents),*)),
    }
}

/// `Job::Item` and its conversions: the arguments as `dispatch_many` and the test assertions
/// take them (a tuple, the bare value for one parameter, `()` for none).
fn item_fns(job: &JobFn) -> TokenStream {
    let item = Ident::new("item", Span::mixed_site());
    match job.params.as_slice() {
        [] => quote! {
            type Item = ();
            fn args_of(#item: ()) -> Self::Args { let () = #item; [] }
            fn item_of(_: Self::Args) -> Self::Item {}
        },
        [Param { ty, .. }] => quote! {
            type Item = #ty;
            fn args_of(#item: Self::Item) -> Self::Args { (#item,) }
            fn item_of(args: Self::Args) -> Self::Item { args.0 }
        },
        _ => quote! {
            type Item = Self::Args;
            fn args_of(#item: Self::Item) -> Self::Args { #item }
            fn item_of(args: Self::Args) -> Self::Item { args }
        },
    }
}
