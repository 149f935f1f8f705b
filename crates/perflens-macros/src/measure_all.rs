//! `#[perflens::measure_all]` and `#[perflens::skip]`.

use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::ToTokens;
use syn::{Attribute, Block, ImplItem, Item, ItemImpl, ItemMod, Signature};

use crate::args::{self, Errors};
use crate::measure::{self, is_perflens_attr};

/// Expands `#[perflens::measure_all(args)] item`.
pub(crate) fn expand_measure_all(
    args: TokenStream2,
    item: TokenStream2,
    enabled: bool,
) -> TokenStream2 {
    let mut errors = Errors::default();
    if let Err(e) = args::expect_no_args(
        &args,
        "#[perflens::measure_all] takes no options; to give one function its own row name, \
         put #[perflens::measure(label = \"...\")] on that function.",
    ) {
        errors.push(e);
    }
    let parsed = match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Impl(imp)) => Some(Item::Impl(imp)),
        Ok(Item::Mod(module)) if module.content.is_some() => Some(Item::Mod(module)),
        Ok(Item::Mod(module)) => {
            errors.push(syn::Error::new(
                Span::call_site(),
                format!(
                    "#[perflens::measure_all] cannot see inside `mod {};` because its body is in another file; \
                     put #[perflens::measure_all] on the impl blocks in that file, or write the module inline.",
                    module.ident
                ),
            ));
            None
        }
        Ok(other) => {
            let hint = match other {
                Item::Fn(_) => " To measure a single function, use #[perflens::measure].",
                Item::Trait(_) => " Put it on the impl blocks that implement this trait.",
                _ => "",
            };
            errors.push(syn::Error::new(
                Span::call_site(),
                format!("#[perflens::measure_all] can only be applied to an `impl` block or an inline `mod {{ ... }}`.{hint}"),
            ));
            None
        }
        Err(e) => {
            errors.push(e);
            None
        }
    };
    if let Err(e) = errors.finish() {
        return measure::with_error(e, item);
    }
    let Some(mut parsed) = parsed else {
        return item;
    };
    if !enabled {
        return item;
    }
    match &mut parsed {
        Item::Impl(imp) => instrument_impl(imp),
        Item::Mod(module) => instrument_mod(module),
        _ => {}
    }
    parsed.into_token_stream()
}

/// Expands `#[perflens::skip] item`: the item, unchanged.
pub(crate) fn expand_skip(args: TokenStream2, item: TokenStream2) -> TokenStream2 {
    match args::expect_no_args(&args, "#[perflens::skip] takes no options.") {
        Ok(()) => item,
        Err(e) => measure::with_error(e, item),
    }
}

fn instrument_impl(imp: &mut ItemImpl) {
    for impl_item in &mut imp.items {
        if let ImplItem::Fn(func) = impl_item {
            instrument_if_wanted(&func.attrs, &mut func.sig, &mut func.block);
        }
    }
}

fn instrument_mod(module: &mut ItemMod) {
    let Some((_, items)) = &mut module.content else {
        return;
    };
    for item in items {
        match item {
            Item::Fn(func) => instrument_if_wanted(&func.attrs, &mut func.sig, &mut func.block),
            Item::Impl(imp) if !is_skipped(&imp.attrs) && !has_own_instrumentation(&imp.attrs) => {
                instrument_impl(imp)
            }
            Item::Mod(inner)
                if !is_skipped(&inner.attrs) && !has_own_instrumentation(&inner.attrs) =>
            {
                instrument_mod(inner);
            }
            _ => {}
        }
    }
}

/// Instruments one function unless it is skipped, already instrumented by
/// its own attribute, or cannot be instrumented (`const fn`, naked).
fn instrument_if_wanted(attrs: &[Attribute], sig: &mut Signature, block: &mut Block) {
    if is_skipped(attrs) || has_own_instrumentation(attrs) || sig.constness.is_some() {
        return;
    }
    if attrs.iter().any(|a| a.path().is_ident("naked")) {
        return;
    }
    let label = args::str_lit("", Span::call_site());
    measure::instrument_fn(attrs, sig, block, &label);
}

/// Whether the item is marked `#[perflens::skip]`. The attribute is kept:
/// it expands to the item unchanged, and removing it would leave a
/// `use perflens::skip;` unused in instrumented builds only.
fn is_skipped(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| is_perflens_attr(a, "skip"))
}

/// Whether the item carries a perflens attribute that instruments it.
fn has_own_instrumentation(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        ["measure", "main", "measure_all"]
            .iter()
            .any(|name| is_perflens_attr(a, name))
    })
}
