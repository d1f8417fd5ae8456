//! Checks that the item under `#[job]` can be a job, and extracts what `expand` needs.
//!
//! A job is looked up by name and called by the worker with arguments decoded from JSON, so
//! the fn must be a free, non-generic, safe Rust fn whose parameters are plain names of owned
//! types. Every problem is reported, each on the token that causes it.

use crate::Errors;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{
    FnArg, GenericArgument, Ident, Item, ItemFn, Pat, PathArguments, ReturnType, Safety, Signature,
    Type,
};

/// A fn that passed every check.
pub(crate) struct JobFn {
    /// The user's fn, emitted unchanged.
    pub item: ItemFn,
    /// Its wire arguments, in order: the parameters that are neither `Context` nor `State`.
    pub params: Vec<Param>,
    /// Every parameter, in order, as the worker supplies it.
    pub inputs: Vec<Input>,
    /// The generated type's name: the fn name in UpperCamelCase.
    pub type_ident: Ident,
}

/// One wire argument of the job fn: `to: String`.
pub(crate) struct Param {
    pub ident: Ident,
    pub ty: Type,
}

/// What the worker passes for one parameter of the job fn.
pub(crate) enum Input {
    /// The wire argument at this index of [`JobFn::params`].
    Arg(usize),
    /// The attempt's `gator_core::Context`.
    Context,
    /// `State<T>`: the application state of type `T` (the type as written, for spans).
    State(Box<Type>),
}

/// Checks `item`. Returns `None` (with the reasons in `errors`) if it cannot be a job.
pub(crate) fn job_fn(item: Item, errors: &mut Errors) -> Option<JobFn> {
    let item = match item {
        Item::Fn(item) => item,
        other => {
            errors.push(syn::Error::new_spanned(
                item_head(&other),
                "`#[job]` goes on a fn: write the job as a plain `fn` or `async fn`, \
                 and `#[job]` generates its type",
            ));
            return None;
        }
    };
    let before = errors.len();
    check_qualifiers(&item.sig, errors);
    check_generics(&item.sig, errors);
    let (params, inputs) = params(&item.sig, errors);
    check_return_type(&item.sig.output, errors);
    let type_ident = type_ident(&item.sig.ident, errors);
    if errors.len() > before {
        return None;
    }
    Some(JobFn {
        item,
        params,
        inputs,
        type_ident: type_ident?,
    })
}

/// The tokens that name an item (`struct Foo`), so an error does not underline its whole body.
fn item_head(item: &Item) -> proc_macro2::TokenStream {
    fn head(keyword: &dyn ToTokens, name: &dyn ToTokens) -> proc_macro2::TokenStream {
        let mut tokens = keyword.to_token_stream();
        name.to_tokens(&mut tokens);
        tokens
    }
    match item {
        Item::Struct(i) => head(&i.struct_token, &i.ident),
        Item::Enum(i) => head(&i.enum_token, &i.ident),
        Item::Union(i) => head(&i.union_token, &i.ident),
        Item::Trait(i) => head(&i.trait_token, &i.ident),
        Item::Mod(i) => head(&i.mod_token, &i.ident),
        Item::Const(i) => head(&i.const_token, &i.ident),
        Item::Static(i) => head(&i.static_token, &i.ident),
        Item::Type(i) => head(&i.type_token, &i.ident),
        Item::Impl(i) => head(&i.impl_token, &i.self_ty),
        other => other.to_token_stream(),
    }
}

fn check_qualifiers(sig: &Signature, errors: &mut Errors) {
    if let Some(constness) = &sig.constness {
        errors.push(syn::Error::new_spanned(
            constness,
            "a job fn cannot be `const`: the worker calls it at run time; remove `const`",
        ));
    }
    if let Safety::Unsafe(unsafety) = &sig.safety {
        errors.push(syn::Error::new_spanned(
            unsafety,
            "a job fn cannot be `unsafe`: the worker calls it with arguments from Redis and \
             cannot uphold a safety contract; make it safe and use `unsafe` blocks inside",
        ));
    }
    if let Some(abi) = &sig.abi {
        errors.push(syn::Error::new_spanned(
            abi,
            "a job fn cannot be `extern`: the worker calls it as a Rust fn; remove the ABI",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(syn::Error::new_spanned(
            variadic,
            "a job fn cannot be variadic: its arguments are stored as a fixed JSON array; \
             take a `Vec<T>` instead",
        ));
    }
}

fn check_generics(sig: &Signature, errors: &mut Errors) {
    let generics = &sig.generics;
    if !generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            generics,
            "a job fn cannot be generic: jobs are looked up by name at run time, so the worker \
             must know the concrete argument types; use concrete types",
        ));
    } else if let Some(where_clause) = &generics.where_clause {
        errors.push(syn::Error::new_spanned(
            where_clause,
            "a job fn cannot have a `where` clause: jobs are looked up by name at run time, so \
             they cannot be generic; remove it",
        ));
    }
}

/// The parameters, checked: each wire argument a plain name with an owned type, at most one
/// `Context`, and any number of `State<T>`.
fn params(sig: &Signature, errors: &mut Errors) -> (Vec<Param>, Vec<Input>) {
    let mut params = Vec::new();
    let mut inputs = Vec::new();
    let mut context: Option<&Type> = None;
    for arg in &sig.inputs {
        let arg = match arg {
            FnArg::Typed(arg) => arg,
            FnArg::Receiver(receiver) => {
                errors.push(syn::Error::new_spanned(
                    receiver,
                    "a job cannot take `self`: the worker calls it with only its stored \
                     arguments; put the job in a free fn outside the `impl` block",
                ));
                continue;
            }
        };
        // `Context` and `State<T>` come from the worker, not from the payload, so they may be
        // taken with any pattern (`State(db): State<Db>`, `_: Context`).
        if is_context(&arg.ty) {
            if let Some(first) = context {
                let mut err = syn::Error::new_spanned(
                    &arg.ty,
                    "a job takes at most one `Context`: remove this parameter and use the \
                     first (it is cheap to clone with `ctx.clone()`)",
                );
                err.combine(syn::Error::new_spanned(
                    first,
                    "the first `Context` is here",
                ));
                errors.push(err);
            }
            context = Some(&arg.ty);
            inputs.push(Input::Context);
            continue;
        }
        if let Some(inner) = state_type(&arg.ty) {
            inputs.push(Input::State(Box::new(inner.clone())));
            continue;
        }
        check_owned(&arg.ty, errors);
        match &*arg.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
                inputs.push(Input::Arg(params.len()));
                params.push(Param {
                    ident: pat.ident.clone(),
                    ty: (*arg.ty).clone(),
                });
            }
            pat => errors.push(syn::Error::new_spanned(
                pat,
                "a job parameter must be a plain name, like `point: (i32, i32)`: the generated \
                 `call` and `dispatch` fns take the same parameters; destructure it in the body",
            )),
        }
    }
    (params, inputs)
}

/// `Context`, `gator_core::Context` or `::gator_core::Context`: the attempt's context. It is
/// recognised by name, as the macro cannot resolve types; a type of your own named `Context`
/// cannot be a job argument.
fn is_context(ty: &Type) -> bool {
    match ty {
        Type::Path(t) if t.qself.is_none() => t
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Context" && s.arguments.is_empty()),
        Type::Paren(t) => is_context(&t.elem),
        Type::Group(t) => is_context(&t.elem),
        _ => false,
    }
}

/// The `T` of `State<T>` (or `gator_core::State<T>`), recognised by name like `Context`.
fn state_type(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Path(t) if t.qself.is_none() => {
            let last = t.path.segments.last()?;
            if last.ident != "State" {
                return None;
            }
            match &last.arguments {
                PathArguments::AngleBracketed(args) if args.args.len() == 1 => {
                    match args.args.first() {
                        Some(GenericArgument::Type(inner)) => Some(inner),
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        Type::Paren(t) => state_type(&t.elem),
        Type::Group(t) => state_type(&t.elem),
        _ => None,
    }
}

/// Rejects borrowed types anywhere in a parameter's type: arguments come back from JSON, so
/// there is nothing for a reference to borrow from.
fn check_owned(ty: &Type, errors: &mut Errors) {
    match ty {
        Type::Reference(reference) => errors.push(syn::Error::new_spanned(
            reference,
            format!(
                "job arguments are stored as JSON and must be owned: use `{}` instead of `{}`",
                owned_suggestion(&reference.elem),
                reference.to_token_stream().to_string().replace("& ", "&"),
            ),
        )),
        Type::ImplTrait(impl_trait) => errors.push(syn::Error::new_spanned(
            impl_trait,
            "job arguments are stored as JSON and must be a concrete owned type, \
             not `impl Trait`: e.g. `String` instead of `impl Into<String>`",
        )),
        Type::Paren(t) => check_owned(&t.elem, errors),
        Type::Group(t) => check_owned(&t.elem, errors),
        Type::Array(t) => check_owned(&t.elem, errors),
        Type::Slice(t) => check_owned(&t.elem, errors),
        Type::Tuple(t) => t.elems.iter().for_each(|elem| check_owned(elem, errors)),
        Type::Path(t) => {
            for segment in &t.path.segments {
                if let PathArguments::AngleBracketed(args) = &segment.arguments {
                    for arg in &args.args {
                        if let GenericArgument::Type(ty) = arg {
                            check_owned(ty, errors);
                        }
                    }
                }
            }
        }
        // The rest fail on `Serialize`/`DeserializeOwned` with the compiler's own message.
        _ => {}
    }
}

/// What to write instead of `&elem`.
fn owned_suggestion(elem: &Type) -> String {
    match elem {
        Type::Path(path) if path.path.is_ident("str") => "String".to_owned(),
        Type::Path(path) if path.path.is_ident("Path") => "PathBuf".to_owned(),
        Type::Slice(slice) => format!("Vec<{}>", slice.elem.to_token_stream()),
        other => other.to_token_stream().to_string(),
    }
}

/// Only the shape is checked here; `::gator_core::IntoJobResult` enforces the contract.
fn check_return_type(output: &ReturnType, errors: &mut Errors) {
    let ty = match output {
        ReturnType::Default => return,
        ReturnType::Type(_, ty) => ty,
    };
    if !is_unit_or_result(ty) {
        errors.push(syn::Error::new_spanned(
            ty,
            "a job returns `()` or `Result<T, E>` where T: Serialize (its result) and E: Display; \
             return a value as `Ok(value)`",
        ));
    }
}

fn is_unit_or_result(ty: &Type) -> bool {
    match ty {
        Type::Tuple(tuple) => tuple.elems.is_empty(),
        Type::Paren(t) => is_unit_or_result(&t.elem),
        Type::Group(t) => is_unit_or_result(&t.elem),
        Type::Path(t) => {
            t.qself.is_none() && t.path.segments.last().is_some_and(|s| s.ident == "Result")
        }
        _ => false,
    }
}

/// `send_email` → `SendEmail`, `process_v2` → `ProcessV2`, spanned at the fn name so "go to
/// definition" on the type lands on the fn.
fn type_ident(fn_ident: &Ident, errors: &mut Errors) -> Option<Ident> {
    let fn_name = fn_ident.unraw().to_string();
    let type_name = upper_camel_case(&fn_name);
    let problem = if type_name.is_empty() || type_name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("cannot make a type name from the fn name `{fn_name}`")
    } else if type_name == fn_name {
        // A unit struct is also a value, so it would clash with the fn of the same name.
        format!("the job type would be named `{type_name}`, like the fn")
    } else {
        return Some(Ident::new(&type_name, fn_ident.span()));
    };
    errors.push(syn::Error::new(
        fn_ident.span(),
        format!("{problem}: name the job fn in snake_case, e.g. `send_email`, and `#[job]` names its type `SendEmail`"),
    ));
    None
}

fn upper_camel_case(snake: &str) -> String {
    let mut camel = String::with_capacity(snake.len());
    for word in snake.split('_') {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            camel.extend(first.to_uppercase());
            camel.push_str(chars.as_str());
        }
    }
    camel
}

#[cfg(test)]
mod tests {
    use super::upper_camel_case;

    #[test]
    fn fn_names_become_upper_camel_case_type_names() {
        assert_eq!(upper_camel_case("send_email"), "SendEmail");
        assert_eq!(upper_camel_case("process_v2"), "ProcessV2");
        assert_eq!(upper_camel_case("_private__job_"), "PrivateJob");
        assert_eq!(upper_camel_case("resize"), "Resize");
        assert_eq!(upper_camel_case("send_HTML"), "SendHTML");
    }
}
