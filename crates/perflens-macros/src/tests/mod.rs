//! Unit tests of the expansions, on token streams (no compiler involved).
//! The compiled behaviour is covered by the trybuild tests of `perflens`.

use proc_macro2::{TokenStream as TokenStream2, TokenTree};

mod awaits;
mod block;
mod hotpath;
mod main_fn;
mod measure;
mod measure_all;

type Expand = fn(TokenStream2, TokenStream2, bool) -> TokenStream2;

/// Items of every shape an attribute may see.
fn sample_fns() -> Vec<TokenStream2> {
    vec![
        quote::quote! { pub fn free(x: u32) -> u32 { x + 1 } },
        quote::quote! { fn method(&self, a: &str) -> usize { self.n + a.len() } },
        quote::quote! {
            /// Docs.
            #[inline]
            pub(crate) fn generic<T: Clone, const N: usize>(t: &[T; N]) -> impl Iterator<Item = T> + '_
            where T: Send { t.iter().cloned() }
        },
        quote::quote! { async fn fetch(&mut self, id: u64) -> Result<Row, Error> { let r = get(id).await?; Ok(r) } },
        quote::quote! { unsafe extern "C" fn raw(p: *const u8) -> u8 { unsafe { *p } } },
        quote::quote! { #[cfg(test)] fn early(x: Option<u32>) -> u32 { let Some(x) = x else { return 0 }; x } },
    ]
}

fn sample_containers() -> Vec<TokenStream2> {
    vec![
        quote::quote! { impl<T> Foo<T> { fn a(&self) {} #[perflens::skip] fn b() {} async fn c(&self) -> u8 { 1 } } },
        quote::quote! { impl Trait for Foo { fn a(&self) -> u32 { 1 } } },
        quote::quote! { mod inner { pub fn f() {} mod nested { fn g() {} } impl X { fn h(&self) {} } } },
    ]
}

/// With the feature off, a valid input comes out unchanged.
fn assert_unchanged(expand: Expand, args: TokenStream2, item: &TokenStream2) {
    let out = expand(args, item.clone(), false);
    assert_eq!(out.to_string(), item.to_string());
}

/// The messages of the `compile_error!` invocations in `tokens`.
fn errors(tokens: &TokenStream2) -> Vec<String> {
    let mut out = Vec::new();
    let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Ident(ident) if ident == "compile_error" => {
                if let Some(TokenTree::Group(group)) = trees.get(i + 2) {
                    let lit: syn::LitStr = syn::parse2(group.stream()).expect("string literal");
                    out.push(lit.value());
                }
            }
            TokenTree::Group(group) => out.extend(errors(&group.stream())),
            _ => {}
        }
    }
    out
}

/// Asserts exactly one error, containing `needle`.
fn assert_error(tokens: &TokenStream2, needle: &str) {
    let errors = errors(tokens);
    assert_eq!(errors.len(), 1, "expected one error, got {errors:?}");
    assert!(
        errors[0].contains(needle),
        "error {:?} does not contain {needle:?}",
        errors[0]
    );
}

fn assert_no_error(tokens: &TokenStream2) {
    let errors = errors(tokens);
    assert!(errors.is_empty(), "unexpected errors: {errors:?}");
}

/// `tokens` as a string without spaces, to search for fragments.
fn squash(tokens: &TokenStream2) -> String {
    tokens
        .to_string()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

fn contains(tokens: &TokenStream2, fragment: &str) -> bool {
    let fragment: String = fragment.chars().filter(|c| !c.is_whitespace()).collect();
    squash(tokens).contains(&fragment)
}

fn count(tokens: &TokenStream2, fragment: &str) -> usize {
    let fragment: String = fragment.chars().filter(|c| !c.is_whitespace()).collect();
    squash(tokens).matches(&fragment).count()
}
