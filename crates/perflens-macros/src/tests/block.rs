use proc_macro2::TokenStream as TokenStream2;
use quote::quote;

use super::{assert_error, assert_no_error, contains, errors};
use crate::block::{contains_await, expand_measure_block};

fn has_await(block: TokenStream2) -> bool {
    contains_await(&syn::parse2(block).unwrap())
}

#[test]
fn disabled_expands_to_the_block() {
    for block in [
        quote!({ work() }),
        quote!({
            let x = f().await;
            x + 1
        }),
        quote!({}),
    ] {
        let out = expand_measure_block(quote!("label", #block), false);
        assert_eq!(out.to_string(), block.to_string());
        let out = expand_measure_block(quote!("label", #block,), false);
        assert_eq!(out.to_string(), block.to_string());
    }
}

#[test]
fn sync_block_gets_a_guard() {
    let out = expand_measure_block(
        quote!("parse", {
            let x = parse()?;
            x + 1
        }),
        true,
    );
    assert_no_error(&out);
    assert!(contains(
        &out,
        "{ let __perflens_guard = { \
           #[allow(clippy::items_after_statements, clippy::missing_docs_in_private_items)] \
           static __PERFLENS_CS: ::perflens::__private::Callsite = ::perflens::__private::Callsite::new(\"parse\", || \"\"); \
           ::perflens::__private::Guard::enter(&__PERFLENS_CS) }; \
         let x = parse()?; x + 1 }"
    ));
}

#[test]
fn awaiting_block_is_an_instrumented_async_block() {
    let out = expand_measure_block(
        quote!("io", {
            let x = read().await;
            x.len()
        }),
        true,
    );
    assert_no_error(&out);
    assert!(contains(&out, "::perflens::__private::instrument({"));
    assert!(contains(
        &out,
        "Callsite::new(\"io\", || \"\"); &__PERFLENS_CS }, async { let x = ::perflens::__private::awaited({"
    ));
    assert!(contains(&out, "}, read()).await; x.len() }).await"));
}

#[test]
fn await_detection() {
    assert!(has_await(quote!({ f().await })));
    assert!(has_await(quote!({ if c { g(f().await) } else { 0 } })));
    assert!(has_await(quote!({ println!("{}", f().await) })));
    assert!(has_await(quote!({ vec![f().await; 3] })));
    assert!(has_await(quote!({ my_dsl!(x => f().await) })));
    assert!(has_await(quote!({
        loop {
            f().await;
        }
    })));
    assert!(!has_await(quote!({ f() })));
    assert!(!has_await(quote!({
        let c = async { f().await };
        c
    })));
    assert!(!has_await(quote!({
        let c = || async move { f().await };
        c
    })));
    assert!(!has_await(quote!({
        async fn inner() {
            f().await
        }
        inner
    })));
    assert!(!has_await(quote!({ println!("await") })));
}

#[test]
fn escaping_control_flow_next_to_await_is_rejected() {
    let cases = [
        (
            quote!({
                let x = f().await?;
                x
            }),
            "so `?` here would return from the block, not the function: compute the Result inside and apply `?` outside the macro.",
        ),
        (
            quote!({
                if f().await {
                    return 1;
                }
                2
            }),
            "`return` here would return from the block",
        ),
        (
            quote!({
                if f().await {
                    break;
                }
            }),
            "`break` here could not leave the loop outside it",
        ),
        (
            quote!({
                if f().await {
                    continue;
                }
            }),
            "`continue` here could not reach the loop outside it",
        ),
        (
            quote!({
                'inner: loop {
                    f().await;
                    break 'outer;
                }
            }),
            "`break` here",
        ),
        (quote!({ println!("{}", f().await?) }), "`?` here"),
    ];
    for (block, needle) in cases {
        for enabled in [false, true] {
            let out = expand_measure_block(quote!("l", #block), enabled);
            assert_error(&out, needle);
            // The statements follow the error, spliced.
            let block = block.to_string();
            let stmts = block.trim_start_matches('{').trim_end_matches('}').trim();
            assert!(out.to_string().contains(stmts), "{out}");
        }
    }
    let both = expand_measure_block(
        quote!("l", {
            f().await?;
            return 2;
        }),
        true,
    );
    assert_eq!(errors(&both).len(), 2);
}

#[test]
fn local_control_flow_next_to_await_is_fine() {
    let blocks = [
        quote!({
            for x in xs {
                if f(x).await {
                    break;
                } else {
                    continue;
                }
            }
        }),
        quote!({
            'a: loop {
                loop {
                    f().await;
                    break 'a;
                }
            }
        }),
        quote!({
            let v = 'b: {
                if f().await {
                    break 'b 1;
                }
                2
            };
            v
        }),
        quote!({
            let g = || -> Result<u8, E> { Ok(h()?) };
            f().await;
            g()
        }),
        quote!({
            let s = async {
                h().await?;
                Ok::<_, E>(())
            };
            s.await
        }),
        quote!({
            fn helper() -> Option<u8> {
                Some(h()?)
            }
            f().await;
            helper()
        }),
    ];
    for block in blocks {
        assert_no_error(&expand_measure_block(quote!("l", #block), true));
    }
    // Without `.await` the block stays in the function: `?` and `return` work.
    assert_no_error(&expand_measure_block(
        quote!("l", {
            let x = f()?;
            if x {
                return 1;
            }
            2
        }),
        true,
    ));
}

#[test]
fn wrong_arguments_are_reported() {
    let cases = [
        (quote!(), "measure_block! expects a label and a block"),
        (
            quote!(label, { x }),
            "the first argument of measure_block! must be a string literal naming the row",
        ),
        (
            quote!(42, { x }),
            "the first argument of measure_block! must be a string literal",
        ),
        (
            quote!("", { x }),
            "the label of measure_block! must not be empty.",
        ),
        (quote!("l"), "expected `,` and a block after the label"),
        (
            quote!("l", x + 1),
            "the second argument of measure_block! must be a block in braces",
        ),
        (
            quote!("l", { x }, { y }),
            "measure_block! takes exactly two arguments",
        ),
    ];
    for (input, needle) in cases {
        for enabled in [false, true] {
            assert_error(&expand_measure_block(input.clone(), enabled), needle);
        }
    }
}
