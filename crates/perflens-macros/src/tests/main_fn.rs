use proc_macro2::TokenStream as TokenStream2;
use quote::{ToTokens, quote};

use super::{assert_error, assert_no_error, assert_unchanged, contains, count, sample_fns};
use crate::main_fn::{Allocator, MainOptions, Mode, expand_main, parse_main_args};

/// `expand_main` without the `alloc` feature.
fn expand(args: TokenStream2, item: TokenStream2, enabled: bool) -> TokenStream2 {
    expand_main(args, item, enabled, false)
}

#[test]
fn disabled_is_identity() {
    for item in sample_fns() {
        assert_unchanged(expand, quote!(), &item);
        assert_unchanged(expand, quote!(limit = 3, format = "none"), &item);
    }
    assert_unchanged(
        expand,
        quote!(),
        &quote!(
            fn main() -> Result<(), Box<dyn Error>> {
                run()?;
                Ok(())
            }
        ),
    );
}

#[test]
fn options_are_parsed() {
    let options = parse_main_args(quote!(
        percentiles = [50, 95, 99.9],
        limit = 20,
        format = "json",
        mode = "sampled",
        sample_every = 8,
        live = true,
        trace = "out.pftrace",
    ))
    .unwrap();
    assert_eq!(
        options,
        MainOptions {
            percentiles: Some(vec![50.0, 95.0, 99.9]),
            limit: Some(20),
            format: Some("json"),
            mode: Some(Mode::Sampled { every: 8 }),
            allocator: None,
            live: Some(true),
            trace: Some("out.pftrace".into()),
            output_path: None,
        }
    );
    assert!(
        parse_main_args(quote!(trace = "out.txt"))
            .unwrap_err()
            .to_string()
            .contains("ends in none of .json (Chrome JSON) or .pftrace (Perfetto)")
    );
    assert_eq!(
        parse_main_args(quote!(mode = "sampled")).unwrap().mode,
        Some(Mode::Sampled { every: 64 })
    );
    assert_eq!(
        parse_main_args(quote!(mode = "count")).unwrap().mode,
        Some(Mode::Count)
    );
    assert_eq!(parse_main_args(quote!()).unwrap(), MainOptions::default());
}

#[test]
fn sync_main_starts_the_session_then_measures_itself() {
    let out = expand(
        quote!(
            percentiles = [50, 99.9],
            limit = 5,
            format = "table",
            mode = "sampled",
            sample_every = 8
        ),
        quote!(
            fn main() -> Result<(), E> {
                run()?;
                Ok(())
            }
        ),
        true,
    );
    assert_no_error(&out);
    let func: syn::ItemFn = syn::parse2(out.clone()).unwrap();
    assert_eq!(
        func.sig.to_token_stream().to_string(),
        quote!(fn main() -> Result<(), E>).to_string()
    );
    let body = func.block.to_token_stream();
    let start = "let __perflens_main = ::perflens::__private::MainGuard::start(::perflens::__private::MainOptions { \
        percentiles: ::core::option::Option::Some(&[50.0, 99.9]), \
        limit: ::core::option::Option::Some(5), \
        format: ::core::option::Option::Some(::perflens::__private::Format::Table), \
        mode: ::core::option::Option::Some(::perflens::__private::Mode::Sampled { every: 8 }), \
        ..::core::default::Default::default() });";
    assert!(contains(&body, start), "{body}");
    assert!(contains(&body, "let __perflens_guard = {"));
    let squashed = super::squash(&body);
    assert!(squashed.find("MainGuard::start").unwrap() < squashed.find("Guard::enter").unwrap());
    assert!(contains(&body, "{ run()?; Ok(()) } }"));
}

#[test]
fn no_options_use_the_defaults() {
    let out = expand(
        quote!(),
        quote!(
            fn main() {}
        ),
        true,
    );
    assert!(contains(
        &out,
        "MainGuard::start(::perflens::__private::MainOptions { ..::core::default::Default::default() })"
    ));
}

#[test]
fn async_main_stays_async_and_awaits_its_body() {
    let out = expand(
        quote!(format = "none"),
        quote!(
            #[tokio::main]
            async fn main() {
                work().await
            }
        ),
        true,
    );
    assert_no_error(&out);
    assert!(contains(&out, "#[tokio::main] async fn main() {"));
    assert!(contains(&out, "Some(::perflens::__private::Format::None)"));
    assert!(contains(&out, "::perflens::__private::instrument({"));
    assert!(contains(
        &out,
        "async move { { ::perflens::__private::awaited({"
    ));
    assert!(contains(&out, "}, work()).await } }).await }"));
}

#[test]
fn misuse_is_reported_enabled_or_not() {
    let cases = [
        (quote!(percentiles = [0]), "percentile 0 is out of range"),
        (
            quote!(percentiles = [100.5]),
            "percentile 100.5 is out of range",
        ),
        (quote!(percentiles = [-5]), "percentile -5 is out of range"),
        (
            quote!(percentiles = ["50"]),
            "each percentile must be a number literal",
        ),
        (
            quote!(percentiles = []),
            "must list at least one percentile",
        ),
        (
            quote!(percentiles = 99),
            "must be a list of numbers in brackets",
        ),
        (
            quote!(limit = "10"),
            "`limit` must be a positive integer literal",
        ),
        (
            quote!(format = "xml"),
            "unknown format \"xml\": expected one of \"table\", \"json\", \"none\", \"json-pretty\".",
        ),
        (
            quote!(format = json),
            "`format` must be a string literal, e.g. `format = \"table\"`",
        ),
        (
            quote!(mode = "fast"),
            "unknown mode \"fast\": expected one of \"timed\", \"count\", \"sampled\".",
        ),
        (
            quote!(sample_every = 10),
            "`sample_every` only applies to sampled timing",
        ),
        (
            quote!(mode = "count", sample_every = 10),
            "`sample_every` only applies to sampled timing",
        ),
        (
            quote!(mode = "sampled", sample_every = 0),
            "`sample_every` must be at least 1",
        ),
        (
            quote!(mode = "sampled", sample_every = 5_000_000_000),
            "`sample_every` must be at most 4294967295",
        ),
        (
            quote!(threads = 4),
            "unknown option `threads` for #[perflens::main]: the valid options are `percentiles`, `limit`, `format`, `mode`, `sample_every`, `allocator`, `live`, `trace` and `output_path`.",
        ),
        (quote!(limit = 1, limit = 2), "duplicate option `limit`"),
        (
            quote!(live = "yes"),
            "`live` must be `true` or `false`, e.g. `live = true`.",
        ),
        (quote!(allocator = 5), NOT_A_PATH),
        (
            quote!(allocator = "std::alloc::System"),
            "`allocator` takes a path, not a string: write `allocator = std::alloc::System` without quotes.",
        ),
        (quote!(allocator = MyAlloc::new()), NOT_A_PATH),
        (quote!(allocator = <A as Tr>::Alloc), NOT_A_PATH),
        (quote!(allocator = &System), NOT_A_PATH),
        (
            quote!(allocator = System, allocator = System),
            "duplicate option `allocator`",
        ),
    ];
    for (args, needle) in cases {
        for (enabled, alloc) in [(false, false), (true, false), (true, true)] {
            let out = expand_main(
                args.clone(),
                quote!(
                    fn main() {}
                ),
                enabled,
                alloc,
            );
            assert_error(&out, needle);
            assert_eq!(count(&out, "__PERFLENS_GLOBAL_ALLOC"), 0, "{out}");
        }
    }
    assert_error(
        &expand(
            quote!(),
            quote!(
                struct S;
            ),
            true,
        ),
        "#[perflens::main] can only be applied to a function",
    );
    assert_error(
        &expand(
            quote!(),
            quote!(
                const fn main() {}
            ),
            false,
        ),
        "`const fn`",
    );
}

const NOT_A_PATH: &str = "`allocator` must be the path of a unit-struct allocator, used both as its type \
    and its value, e.g. `allocator = std::alloc::System` or `allocator = mimalloc::MiMalloc`. For an \
    allocator built by an expression, define a unit struct that implements `GlobalAlloc` by forwarding \
    to it, and give that struct's path.";

#[test]
fn allocator_option_is_parsed_as_a_path() {
    let options = parse_main_args(quote!(allocator = mimalloc::MiMalloc, limit = 3)).unwrap();
    assert_eq!(
        options.allocator,
        Some(Allocator(syn::parse_quote!(mimalloc::MiMalloc)))
    );
    assert_eq!(options.limit, Some(3));
    assert_eq!(
        parse_main_args(quote!(allocator = ::std::alloc::System))
            .unwrap()
            .allocator,
        Some(Allocator(syn::parse_quote!(::std::alloc::System)))
    );
}

fn plain_main() -> TokenStream2 {
    quote!(
        fn main() {
            run();
        }
    )
}

#[test]
fn without_alloc_an_allocator_is_installed_as_is() {
    let item = plain_main();
    let expected = quote! {
        #item
        #[global_allocator]
        static __PERFLENS_GLOBAL_ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;
    };
    // Off entirely: the item unchanged, then the user's allocator.
    for alloc in [false, true] {
        let out = expand_main(
            quote!(allocator = mimalloc::MiMalloc),
            item.clone(),
            false,
            alloc,
        );
        assert_eq!(out.to_string(), expected.to_string());
    }
    // On without `alloc`: instrumented, and the same plain static.
    let out = expand(quote!(allocator = mimalloc::MiMalloc), item.clone(), true);
    assert_no_error(&out);
    let file: syn::File = syn::parse2(out.clone()).unwrap();
    assert_eq!(file.items.len(), 2, "{out}");
    assert!(contains(&out, "MainGuard::start"));
    assert_eq!(
        file.items[1].to_token_stream().to_string(),
        quote!(
            #[global_allocator]
            static __PERFLENS_GLOBAL_ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;
        )
        .to_string()
    );
}

#[test]
fn without_alloc_or_allocator_nothing_is_added() {
    for enabled in [false, true] {
        let out = expand(quote!(limit = 3), plain_main(), enabled);
        assert_eq!(count(&out, "global_allocator"), 0, "{out}");
        assert_eq!(count(&out, "CountingAlloc"), 0, "{out}");
    }
}

#[test]
fn alloc_installs_the_counting_allocator_around_system_by_default() {
    let out = expand_main(quote!(), plain_main(), true, true);
    assert_no_error(&out);
    let file: syn::File = syn::parse2(out.clone()).unwrap();
    assert_eq!(file.items.len(), 2, "{out}");
    assert!(matches!(file.items[0], syn::Item::Fn(_)));
    assert_eq!(
        super::squash(&file.items[1].to_token_stream()),
        "#[global_allocator]static__PERFLENS_GLOBAL_ALLOC:\
         ::perflens::__private::CountingAlloc<::std::alloc::System>=\
         ::perflens::__private::CountingAlloc::new(::std::alloc::System);"
    );
}

#[test]
fn alloc_wraps_the_requested_allocator() {
    let out = expand_main(
        quote!(format = "none", allocator = tikv_jemallocator::Jemalloc),
        quote!(
            #[tokio::main]
            async fn main() {
                work().await
            }
        ),
        true,
        true,
    );
    assert_no_error(&out);
    let file: syn::File = syn::parse2(out.clone()).unwrap();
    assert_eq!(file.items.len(), 2, "{out}");
    assert!(contains(&out, "#[tokio::main] async fn main() {"));
    assert_eq!(
        super::squash(&file.items[1].to_token_stream()),
        "#[global_allocator]static__PERFLENS_GLOBAL_ALLOC:\
         ::perflens::__private::CountingAlloc<tikv_jemallocator::Jemalloc>=\
         ::perflens::__private::CountingAlloc::new(tikv_jemallocator::Jemalloc);"
    );
}

/// Under `#[tokio::main]` (which runs first and makes `main` sync,
/// blocking on `let body = async { .. };`), that body is measured as the
/// future `main`, its awaits are sites, and no sync frame wraps the
/// runtime. Any other sync `main` keeps its guard.
#[test]
fn a_main_made_sync_by_the_runtime_measures_its_body_as_a_future() {
    let out = expand(
        quote!(),
        quote!(
            fn main() {
                let body = async {
                    work().await;
                };
                #[allow(clippy::expect_used)]
                {
                    return tokio::runtime::Builder::new_multi_thread()
                        .enable_all()
                        .build()
                        .expect("Failed building the Runtime")
                        .block_on(body);
                }
            }
        ),
        true,
    );
    assert_no_error(&out);
    let body = func_body(&out);
    assert!(
        contains(&body, "let body = ::perflens::__private::instrument("),
        "{body}"
    );
    assert!(contains(&body, "::perflens::__private::awaited("), "{body}");
    assert!(!contains(&body, "let __perflens_guard"), "{body}");
    assert!(contains(&body, ".block_on(body)"), "{body}");
    // Not the runtime's shape: measured as a sync function.
    for item in [
        quote!(
            fn main() {
                let body = async {};
                run(body);
            }
        ),
        quote!(
            fn main() {
                let other = async {};
                block_on(other);
            }
        ),
    ] {
        let body = func_body(&expand(quote!(), item, true));
        assert!(contains(&body, "let __perflens_guard"), "{body}");
        assert!(!contains(&body, "instrument"), "{body}");
    }
}

fn func_body(out: &TokenStream2) -> TokenStream2 {
    let func: syn::ItemFn = syn::parse2(out.clone()).unwrap();
    func.block.to_token_stream()
}
