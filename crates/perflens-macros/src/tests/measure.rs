use quote::{ToTokens, quote};
use syn::{ItemFn, Stmt};

use super::{assert_error, assert_no_error, assert_unchanged, contains, count, sample_fns};
use crate::measure::expand_measure;

fn expand_fn(args: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> ItemFn {
    let out = expand_measure(args, item, true);
    assert_no_error(&out);
    syn::parse2(out).expect("the expansion is a function")
}

#[test]
fn disabled_is_identity() {
    for item in sample_fns() {
        assert_unchanged(expand_measure, quote!(), &item);
        assert_unchanged(expand_measure, quote!(label = "x"), &item);
    }
}

#[test]
fn sync_fn_keeps_signature_and_prepends_guard() {
    for item in sample_fns() {
        let original: ItemFn = syn::parse2(item.clone()).unwrap();
        if original.sig.asyncness.is_some() {
            continue;
        }
        let func = expand_fn(quote!(), item);
        assert_eq!(
            func.sig.to_token_stream().to_string(),
            original.sig.to_token_stream().to_string()
        );
        assert_eq!(
            func.vis.to_token_stream().to_string(),
            original.vis.to_token_stream().to_string()
        );
        assert_eq!(func.attrs.len(), original.attrs.len());
        let [Stmt::Local(guard), Stmt::Expr(syn::Expr::Block(body), None)] =
            func.block.stmts.as_slice()
        else {
            panic!("unexpected body: {}", func.block.to_token_stream());
        };
        let guard = guard.to_token_stream();
        assert!(contains(&guard, "let __perflens_guard = {"));
        assert!(contains(&guard, "fn __perflens_here() {}"));
        assert!(contains(
            &guard,
            "static __PERFLENS_CS: ::perflens::__private::Callsite = ::perflens::__private::Callsite::new(\"\", \
             || ::core::any::type_name_of_val(&__perflens_here),);"
        ));
        assert!(contains(
            &guard,
            "::perflens::__private::Guard::enter(&__PERFLENS_CS)"
        ));
        assert_eq!(
            body.block.to_token_stream().to_string(),
            original.block.to_token_stream().to_string()
        );
    }
}

#[test]
fn label_is_passed_to_the_callsite() {
    let func = expand_fn(
        quote!(label = "parse"),
        quote!(
            fn f() {}
        ),
    );
    assert!(contains(
        &func.to_token_stream(),
        "Callsite::new(\"parse\","
    ));
}

#[test]
fn async_fn_becomes_fn_returning_instrumented_future() {
    let func = expand_fn(
        quote!(),
        quote! {
            #[must_use]
            pub async fn fetch(&mut self, id: u64, (a, b): (u8, u8), _: String) -> Result<Row, Error> {
                let r = get(id).await?;
                Ok(r)
            }
        },
    );
    assert!(func.sig.asyncness.is_none());
    assert_eq!(func.attrs.len(), 1);
    let out = func.to_token_stream();
    assert!(contains(
        &out,
        "-> impl ::core::future::Future<Output = Result<Row, Error>>"
    ));
    assert!(contains(
        &out,
        "(&mut self, __perflens_arg1: u64, __perflens_arg2: (u8, u8), __perflens_arg3: String)"
    ));
    assert!(contains(&out, "::perflens::__private::instrument({"));
    assert!(contains(&out, "fn __perflens_here() {}"));
    assert!(contains(&out, "&__PERFLENS_CS }, async move {"));
    // The return type is pinned, every argument moved into the future.
    assert!(contains(
        &out,
        "::core::option::Option::None::<Result<Row, Error>>"
    ));
    assert!(contains(&out, "let _ = &self;"));
    assert!(contains(&out, "let id = __perflens_arg1;"));
    assert!(contains(
        &out,
        "let __perflens_arg2 = __perflens_arg2; let (a, b) = __perflens_arg2;"
    ));
    assert!(contains(
        &out,
        "let __perflens_arg3 = __perflens_arg3; let _ = __perflens_arg3;"
    ));
    // The body's await is a site (see tests/awaits.rs).
    assert!(contains(
        &out,
        "let __perflens_ret: Result<Row, Error> = { let r = ::perflens::__private::awaited({"
    ));
    assert!(contains(&out, "}, get(id)).await?; Ok(r) };"));
    assert!(
        !contains(&out, ".await }"),
        "the future is returned, not awaited"
    );
}

#[test]
fn async_fn_without_return_type_outputs_unit() {
    let out = expand_fn(
        quote!(),
        quote!(
            async fn run(mut n: u32) {
                n += 1;
            }
        ),
    )
    .to_token_stream();
    assert!(contains(
        &out,
        "fn run(__perflens_arg0: u32) -> impl ::core::future::Future<Output = ()>"
    ));
    assert!(contains(&out, "let mut n = __perflens_arg0;"));
    assert!(!contains(&out, "__perflens_ret"));
}

#[test]
fn async_fn_returning_impl_trait_is_not_pinned() {
    let out = expand_fn(
        quote!(),
        quote!(
            async fn f() -> impl Display {
                1
            }
        ),
    )
    .to_token_stream();
    assert!(contains(&out, "Output = impl Display>"));
    assert!(!contains(&out, "__perflens_ret"));
}

#[test]
fn async_fn_under_another_attribute_macro_stays_async() {
    let out = expand_fn(
        quote!(),
        quote! {
            #[tokio::test]
            async fn t() -> u8 { 1 }
        },
    )
    .to_token_stream();
    assert!(contains(&out, "async fn t() -> u8"));
    assert!(contains(&out, "&__PERFLENS_CS }, async move {"));
    assert!(contains(&out, "let __perflens_ret: u8 = { 1 };"));
    assert!(contains(&out, ".await }"));
}

#[test]
fn misuse_is_reported_enabled_or_not() {
    let cases = [
        (
            quote!(),
            quote!(impl Foo { fn a() {} }),
            "put #[perflens::measure_all] on the block instead",
        ),
        (
            quote!(),
            quote!(
                mod m {}
            ),
            "put #[perflens::measure_all] on the module instead",
        ),
        (
            quote!(),
            quote!(
                struct S;
            ),
            "can only be applied to a function.",
        ),
        (
            quote!(),
            quote!(
                fn declared(&self);
            ),
            "this declaration has none",
        ),
        (
            quote!(),
            quote!(
                const fn c() {}
            ),
            "cannot be applied to a `const fn`",
        ),
        (
            quote!(lable = "x"),
            quote!(
                fn f() {}
            ),
            "unknown option `lable` for #[perflens::measure]: the valid options are `label` and `future`.",
        ),
        (
            quote!(label = 3),
            quote!(
                fn f() {}
            ),
            "`label` must be a string literal",
        ),
        (
            quote!(label = ""),
            quote!(
                fn f() {}
            ),
            "`label` must not be empty",
        ),
        (
            quote!(label = "a", label = "b"),
            quote!(
                fn f() {}
            ),
            "duplicate option `label`",
        ),
        (
            quote!("a"),
            quote!(
                fn f() {}
            ),
            "found a string: options are written as `key = value`, e.g. #[perflens::measure(label = \"parse\")].",
        ),
        (
            quote!(label),
            quote!(
                fn f() {}
            ),
            "expected `=` and a value after `label`",
        ),
    ];
    for (args, item, needle) in cases {
        for enabled in [false, true] {
            let out = expand_measure(args.clone(), item.clone(), enabled);
            assert_error(&out, needle);
            // The item follows the error, unchanged.
            assert!(out.to_string().ends_with(&item.to_string()), "{out}");
        }
    }
}

#[test]
fn several_problems_are_reported_together() {
    let out = expand_measure(
        quote!(label = 1, foo = 2),
        quote!(
            const fn c() {}
        ),
        true,
    );
    assert_eq!(super::errors(&out).len(), 3, "{out}");
}

#[test]
fn guard_appears_once() {
    let out = expand_measure(
        quote!(),
        quote!(
            fn f() {
                g()
            }
        ),
        true,
    );
    assert_eq!(count(&out, "Guard::enter"), 1);
}
