//! `#[perflens::measure]`, and the function rewriting shared with
//! `#[perflens::main]` and `#[perflens::measure_all]`.

use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{ToTokens, quote, quote_spanned};
use syn::visit::Visit;
use syn::{
    Attribute, Block, FnArg, Ident, Item, ItemFn, LitStr, Pat, PatIdent, ReturnType, Signature,
    Type, parse_quote,
};

use crate::args;

/// Expands `#[perflens::measure(args)] item`.
pub(crate) fn expand_measure(
    args: TokenStream2,
    item: TokenStream2,
    enabled: bool,
) -> TokenStream2 {
    let mut errors = args::Errors::default();
    let options = args::parse_measure_args(args).unwrap_or_else(|e| {
        errors.push(e);
        args::MeasureArgs::default()
    });
    let func = parse_fn(item.clone(), "#[perflens::measure]")
        .map_err(|e| errors.push(e))
        .ok();
    if let (Some(span), Some(func)) = (options.future, &func)
        && func.sig.asyncness.is_none()
    {
        errors.push(syn::Error::new(
            span,
            "`future = true` applies to an async fn only (as in hotpath): remove it here.",
        ));
    }
    if let Err(e) = errors.finish() {
        return with_error(e, item);
    }
    let Some(mut func) = func else { return item };
    if !enabled {
        return item;
    }
    let label = (options.label).unwrap_or_else(|| args::str_lit("", Span::call_site()));
    instrument_fn(&func.attrs, &mut func.sig, &mut func.block, &label);
    func.into_token_stream()
}

/// The item unchanged, preceded by the errors (so that rustc does not add
/// follow-up errors about a missing item).
pub(crate) fn with_error(error: syn::Error, item: TokenStream2) -> TokenStream2 {
    let mut out = error.to_compile_error();
    out.extend(item);
    out
}

/// Parses the item an attribute that instruments one function was put on;
/// `what` is the attribute as the user writes it, for messages.
pub(crate) fn parse_fn(item: TokenStream2, what: &str) -> syn::Result<ItemFn> {
    let not_fn = |rest: &str| {
        syn::Error::new(
            Span::call_site(),
            format!("{what} can only be applied to a function{rest}"),
        )
    };
    match syn::parse2::<Item>(item)? {
        Item::Fn(func) => match func.sig.constness {
            Some(constness) => Err(syn::Error::new(
                constness.span,
                format!(
                    "{what} cannot be applied to a `const fn`: the timing code it adds cannot run in const evaluation. \
                     Remove `const` or remove the attribute."
                ),
            )),
            None => Ok(func),
        },
        Item::Impl(_) => Err(not_fn(
            "; to measure every method of this impl block, put #[perflens::measure_all] on the block instead.",
        )),
        Item::Mod(_) => Err(not_fn(
            "; to measure every function of this module, put #[perflens::measure_all] on the module instead.",
        )),
        Item::Verbatim(tokens) if syn::parse2::<syn::TraitItemFn>(tokens.clone()).is_ok() => {
            Err(not_fn(
                " that has a body; this declaration has none. Put the attribute on the functions that implement it.",
            ))
        }
        _ => Err(not_fn(".")),
    }
}

/// Rewrites a function (free function or method) so that every call is
/// measured under the callsite named `label` (empty: derived at run time).
pub(crate) fn instrument_fn(
    attrs: &[Attribute],
    sig: &mut Signature,
    block: &mut Block,
    label: &LitStr,
) {
    if sig.asyncness.is_none() {
        let guard = guard_stmt(label);
        *block = parse_quote!({ #guard #block });
    } else if has_macro_attrs(attrs) {
        // Another attribute macro (e.g. `#[tokio::main]`) comes after us and
        // needs to see an `async fn`: keep it, and wrap the body instead.
        // The body's awaits become sites; the `.await` added here (the
        // measured future itself, awaited by the caller) does not.
        crate::awaits::rewrite_awaits(block);
        let cs = callsite_ref(label);
        let body = typed_body(&sig.output, &TokenStream2::new(), block);
        *block = parse_quote!({
            ::perflens::__private::instrument(#cs, async move #body).await
        });
    } else {
        desugar_async(sig, block, label);
    }
}

/// Turns `async fn f(args) -> T { body }` into
/// `fn f(args) -> impl Future<Output = T> { instrument(cs, async move { body }) }`
/// so that the future captures its parent when it is created.
fn desugar_async(sig: &mut Signature, block: &mut Block, label: &LitStr) {
    sig.asyncness = None;
    let original_output = sig.output.clone();
    let output = match &sig.output {
        ReturnType::Default => quote!(()),
        ReturnType::Type(_, ty) => ty.to_token_stream(),
    };
    // The capture rules of `impl Trait` follow the edition of its tokens'
    // spans. Tokens this crate generates (call-site or mixed-site) carry
    // this crate's edition, 2024, under which every lifetime in scope is
    // captured, as by an `async fn`; this holds in edition 2021 user crates
    // too (tests/fixtures/edition2021 checks it). Were this crate moved to
    // edition 2021, the future would stop capturing `&self` and reference
    // arguments (E0700). Do not span the type with the user's tokens.
    let impl_token = quote_spanned!(Span::mixed_site()=> impl);
    sig.output = parse_quote!(-> #impl_token ::core::future::Future<Output = #output>);

    // Like an `async fn`, move every argument into the future, so that it
    // is dropped when the future completes, not when it is created.
    let mut moves = Vec::new();
    for (index, input) in sig.inputs.iter_mut().enumerate() {
        match input {
            FnArg::Receiver(_) => moves.push(quote!(let _ = &self;)),
            FnArg::Typed(typed) => {
                let arg = Ident::new(&format!("__perflens_arg{index}"), Span::mixed_site());
                let pat = std::mem::replace(&mut *typed.pat, parse_quote!(#arg));
                let attrs: Vec<&Attribute> = typed
                    .attrs
                    .iter()
                    .filter(|a| is_param_attr_to_copy(a))
                    .collect();
                match &pat {
                    Pat::Ident(PatIdent {
                        by_ref: None,
                        subpat: None,
                        ..
                    }) => {
                        moves.push(quote!(#(#attrs)* let #pat = #arg;));
                    }
                    // `let _ = arg;` would not move `arg`: move it first.
                    _ => {
                        moves.push(quote!(#(#attrs)* let #arg = #arg; #(#attrs)* let #pat = #arg;))
                    }
                }
            }
        }
    }
    crate::awaits::rewrite_awaits(block);
    let cs = callsite_ref(label);
    let moves: TokenStream2 = moves.into_iter().collect();
    let body = typed_body(&original_output, &moves, block);
    *block = parse_quote!({
        ::perflens::__private::instrument(#cs, async move #body)
    });
}

/// The body of the async block replacing the body of an `async fn`
/// returning `output`, after the statements `prelude`.
///
/// An async block infers its output type from its body, where the `async
/// fn` coerced its body to the declared type (`&Vec<T>` to `&[T]`, `Box<X>`
/// to `Box<dyn Trait>`). As in `async-trait`, a `return` of the declared
/// type pins the block's type first, and the body is coerced by a `let`.
/// Types containing `impl Trait` cannot be named in a body, so they are
/// left to inference.
pub(crate) fn typed_body(
    output: &ReturnType,
    prelude: &TokenStream2,
    block: &Block,
) -> TokenStream2 {
    let ty = match output {
        ReturnType::Type(_, ty) if !matches!(**ty, Type::Never(_)) && !contains_impl_trait(ty) => {
            ty
        }
        _ => return quote!({ #prelude #block }),
    };
    let ret = Ident::new("__perflens_ret", Span::mixed_site());
    quote!({
        if let ::core::option::Option::Some(#ret) = ::core::option::Option::None::<#ty> {
            #[allow(unreachable_code)]
            return #ret;
        }
        #prelude
        let #ret: #ty = #block;
        #[allow(unreachable_code)]
        #ret
    })
}

fn contains_impl_trait(ty: &Type) -> bool {
    struct Finder(bool);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let mut finder = Finder(false);
    finder.visit_type(ty);
    finder.0
}

/// Attributes of a parameter that must follow it to its `let` rebinding.
fn is_param_attr_to_copy(attr: &Attribute) -> bool {
    ["cfg", "cfg_attr", "allow"]
        .iter()
        .any(|name| attr.path().is_ident(name))
}

/// The items declaring the callsite, inside the function being measured
/// (so that `type_name_of_val` of `__perflens_here` names it).
fn callsite_items(label: &LitStr) -> TokenStream2 {
    quote! {
        #[allow(clippy::items_after_statements, clippy::missing_docs_in_private_items)]
        fn __perflens_here() {}
        #[allow(clippy::missing_docs_in_private_items)]
        static __PERFLENS_CS: ::perflens::__private::Callsite = ::perflens::__private::Callsite::new(
            #label,
            || ::core::any::type_name_of_val(&__perflens_here),
        );
    }
}

/// `let __perflens_guard = { callsite; Guard::enter(&cs) };`
pub(crate) fn guard_stmt(label: &LitStr) -> TokenStream2 {
    let items = callsite_items(label);
    let guard = Ident::new("__perflens_guard", Span::mixed_site());
    quote! {
        let #guard = {
            #items
            ::perflens::__private::Guard::enter(&__PERFLENS_CS)
        };
    }
}

/// An expression of type `&'static Callsite`.
pub(crate) fn callsite_ref(label: &LitStr) -> TokenStream2 {
    let items = callsite_items(label);
    quote! {
        {
            #items
            &__PERFLENS_CS
        }
    }
}

/// Whether the function carries an attribute that may be a macro still to
/// expand (anything but the built-in and tool attributes).
fn has_macro_attrs(attrs: &[Attribute]) -> bool {
    const BUILTIN: &[&str] = &[
        "allow",
        "cfg",
        "cfg_attr",
        "cold",
        "deny",
        "deprecated",
        "doc",
        "expect",
        "export_name",
        "forbid",
        "inline",
        "link_section",
        "must_use",
        "no_mangle",
        "target_feature",
        "track_caller",
        "warn",
    ];
    const TOOLS: &[&str] = &["clippy", "diagnostic", "rustfmt"];
    attrs.iter().any(|attr| {
        let path = attr.path();
        let first = path
            .segments
            .first()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let builtin = if path.segments.len() == 1 {
            BUILTIN.contains(&first.as_str())
        } else {
            TOOLS.contains(&first.as_str())
        };
        !builtin
    })
}

/// Whether `attr` is `#[name]`, `#[perflens::name]` or `#[::perflens::name]`.
pub(crate) fn is_perflens_attr(attr: &Attribute, name: &str) -> bool {
    let segments: Vec<String> = attr
        .path()
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    match segments.as_slice() {
        [only] => only == name,
        [krate, last] => krate == "perflens" && last == name,
        _ => false,
    }
}
