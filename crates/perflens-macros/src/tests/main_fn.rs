use quote::{ToTokens, quote};

use super::{assert_error, assert_no_error, assert_unchanged, contains, sample_fns};
use crate::main_fn::{MainOptions, Mode, expand_main, parse_main_args};

#[test]
fn disabled_is_identity() {
    for item in sample_fns() {
        assert_unchanged(expand_main, quote!(), &item);
        assert_unchanged(expand_main, quote!(limit = 3, format = "none"), &item);
    }
    assert_unchanged(
        expand_main,
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
    ))
    .unwrap();
    assert_eq!(
        options,
        MainOptions {
            percentiles: Some(vec![50.0, 95.0, 99.9]),
            limit: Some(20),
            format: Some("json"),
            mode: Some(Mode::Sampled { every: 8 }),
        }
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
    let out = expand_main(
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
    let out = expand_main(
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
    let out = expand_main(
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
    assert!(contains(&out, "async move { { work().await } }).await }"));
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
        (quote!(limit = 0), "`limit` must be at least 1"),
        (
            quote!(limit = "10"),
            "`limit` must be a positive integer literal",
        ),
        (
            quote!(format = "xml"),
            "unknown format \"xml\": expected one of \"table\", \"json\", \"none\".",
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
            "unknown option `threads` for #[perflens::main]: the valid options are `percentiles`, `limit`, `format`, `mode` and `sample_every`.",
        ),
        (quote!(limit = 1, limit = 2), "duplicate option `limit`"),
    ];
    for (args, needle) in cases {
        for enabled in [false, true] {
            assert_error(
                &expand_main(
                    args.clone(),
                    quote!(
                        fn main() {}
                    ),
                    enabled,
                ),
                needle,
            );
        }
    }
    assert_error(
        &expand_main(
            quote!(),
            quote!(
                struct S;
            ),
            true,
        ),
        "#[perflens::main] can only be applied to a function",
    );
    assert_error(
        &expand_main(
            quote!(),
            quote!(
                const fn main() {}
            ),
            false,
        ),
        "`const fn`",
    );
}
