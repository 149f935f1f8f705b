use quote::{ToTokens, quote};
use syn::{ImplItem, Item, ItemImpl, ItemMod};

use super::{assert_error, assert_no_error, assert_unchanged, contains, count, sample_containers};
use crate::measure_all::{expand_measure_all, expand_skip};

fn instrumented(tokens: &proc_macro2::TokenStream) -> bool {
    contains(tokens, "Guard::enter") || contains(tokens, "__private::instrument(")
}

#[test]
fn disabled_is_identity() {
    for item in sample_containers() {
        assert_unchanged(expand_measure_all, quote!(), &item);
    }
}

#[test]
fn skip_is_identity() {
    for item in super::sample_fns().into_iter().chain(sample_containers()) {
        assert_eq!(
            expand_skip(quote!(), item.clone()).to_string(),
            item.to_string()
        );
    }
    assert_error(
        &expand_skip(
            quote!(always),
            quote!(
                fn f() {}
            ),
        ),
        "#[perflens::skip] takes no options.",
    );
}

#[test]
fn impl_block_methods_are_measured_except_skipped_ones() {
    let out = expand_measure_all(
        quote!(),
        quote! {
            impl<T: Clone> Foo<T> {
                pub fn a(&self) -> T { self.0.clone() }
                #[perflens::skip]
                fn b() {}
                #[skip]
                fn b2() {}
                const fn c() -> u8 { 1 }
                #[perflens::measure(label = "own")]
                fn d() {}
                async fn e(&self) -> u8 { 1 }
                type Out = u8;
                const K: u8 = 1;
            }
        },
        true,
    );
    assert_no_error(&out);
    let imp: ItemImpl = syn::parse2(out).unwrap();
    let fns: Vec<(String, proc_macro2::TokenStream)> = imp
        .items
        .iter()
        .filter_map(|item| match item {
            ImplItem::Fn(f) => Some((f.sig.ident.to_string(), f.to_token_stream())),
            _ => None,
        })
        .collect();
    for (name, tokens) in &fns {
        let expected = matches!(name.as_str(), "a" | "e");
        assert_eq!(instrumented(tokens), expected, "{name}: {tokens}");
    }
    // Skip markers stay (they expand to their item), labels stay for
    // `#[measure]` to expand.
    assert!(contains(&fns[1].1, "#[perflens::skip]"));
    assert!(contains(&fns[2].1, "#[skip]"));
    assert!(contains(&fns[4].1, "#[perflens::measure(label = \"own\")]"));
    assert!(contains(
        &fns[5].1,
        "fn e(&self) -> impl ::core::future::Future<Output = u8>"
    ));
}

#[test]
fn trait_impl_methods_are_measured() {
    let out = expand_measure_all(
        quote!(),
        quote!(impl Display for Foo { fn fmt(&self, f: &mut Formatter<'_>) -> Result { Ok(()) } }),
        true,
    );
    assert_no_error(&out);
    assert_eq!(count(&out, "Guard::enter"), 1);
    assert!(contains(
        &out,
        "impl Display for Foo { fn fmt(&self, f: &mut Formatter<'_>) -> Result {"
    ));
}

#[test]
fn modules_are_measured_recursively() {
    let out = expand_measure_all(
        quote!(),
        quote! {
            pub mod app {
                use perflens::skip;
                pub fn run() {}
                pub struct S;
                impl S { pub fn m(&self) {} }
                mod nested {
                    fn deep() {}
                    #[skip] fn skipped() {}
                }
                #[perflens::skip]
                mod untouched { fn no() {} }
                #[perflens::skip]
                impl Trait for S { fn no(&self) {} }
                #[perflens::main]
                fn main() {}
                mod file;
            }
        },
        true,
    );
    assert_no_error(&out);
    assert_eq!(count(&out, "Guard::enter"), 3, "run, S::m and deep: {out}");
    let module: ItemMod = syn::parse2(out).unwrap();
    let items = &module.content.unwrap().1;
    let Item::Mod(untouched) = &items[5] else {
        panic!()
    };
    assert!(!instrumented(&untouched.to_token_stream()));
}

#[test]
fn misuse_is_reported_enabled_or_not() {
    let cases = [
        (
            quote!(),
            quote!(
                fn f() {}
            ),
            "To measure a single function, use #[perflens::measure].",
        ),
        (
            quote!(),
            quote!(
                trait T {
                    fn f();
                }
            ),
            "Put it on the impl blocks that implement this trait.",
        ),
        (
            quote!(),
            quote!(
                struct S;
            ),
            "can only be applied to an `impl` block or an inline `mod { ... }`.",
        ),
        (
            quote!(),
            quote!(
                mod file;
            ),
            "cannot see inside `mod file;` because its body is in another file",
        ),
        (
            quote!(label = "x"),
            quote!(impl S {}),
            "#[perflens::measure_all] takes no options",
        ),
    ];
    for (args, item, needle) in cases {
        for enabled in [false, true] {
            let out = expand_measure_all(args.clone(), item.clone(), enabled);
            assert_error(&out, needle);
            assert!(out.to_string().ends_with(&item.to_string()));
        }
    }
}
