//! hotpath 0.30.3's options: the ones with perflens's meaning are taken
//! (into the same settings as perflens's own), the others rejected with
//! the perflens way, in both configurations.

use quote::quote;

use super::{assert_error, assert_no_error, contains, errors};
use crate::main_fn::{MainOptions, expand_main, parse_main_args};
use crate::measure::expand_measure;

#[test]
fn hotpaths_main_options_with_perflens_meaning_are_taken() {
    // The shape of hotpath's own examples of `#[hotpath::main]`.
    let options = parse_main_args(quote!(
        percentiles = [50, 99.9],
        format = "json-pretty",
        limit = 0,
        output_path = "report.json",
        allocator = std::alloc::System,
    ))
    .unwrap();
    assert_eq!(options.percentiles, Some(vec![50.0, 99.9]));
    // perflens's JSON is pretty-printed: "json-pretty" is "json".
    assert_eq!(options.format, Some("json"));
    assert_eq!(options.limit, Some(0));
    assert_eq!(options.output_path.as_deref(), Some("report.json"));
    assert!(options.allocator.is_some());
    assert_eq!(
        parse_main_args(quote!(percentiles = [99])).unwrap(),
        MainOptions {
            percentiles: Some(vec![99.0]),
            ..MainOptions::default()
        }
    );
}

#[test]
fn output_path_and_limit_zero_reach_the_runtime() {
    let out = expand_main(
        quote!(
            limit = 0,
            output_path = "out/report.txt",
            format = "json-pretty"
        ),
        quote!(
            fn main() {}
        ),
        true,
        false,
    );
    assert_no_error(&out);
    assert!(
        contains(
            &out,
            "::perflens::__private::MainOptions { \
             limit: ::core::option::Option::Some(0), \
             format: ::core::option::Option::Some(::perflens::__private::Format::Json), \
             output_path: ::core::option::Option::Some(\"out/report.txt\"), \
             ..::core::default::Default::default() }"
        ),
        "{out}"
    );
}

#[test]
fn output_path_must_be_a_string() {
    for (args, message) in [
        (
            quote!(output_path = report),
            "`output_path` must be a string literal, e.g. `output_path = \"report.txt\"`.",
        ),
        (
            quote!(output_path = ""),
            "`output_path` must not be empty, e.g. `output_path = \"report.txt\"`.",
        ),
    ] {
        let error = parse_main_args(args).unwrap_err().to_string();
        assert_eq!(error, message);
    }
}

#[test]
fn hotpaths_other_main_options_name_the_perflens_way() {
    let limit = "is hotpath's row limit for one section; perflens has one row limit for every \
                 table: `limit = N` (or PERFLENS_LIMIT=N; `limit = 0` prints every row)";
    for key in [
        "functions_limit",
        "channels_limit",
        "streams_limit",
        "futures_limit",
        "threads_limit",
        "rw_locks_limit",
        "mutexes_limit",
    ] {
        let ident = syn::Ident::new(key, proc_macro2::Span::call_site());
        for enabled in [true, false] {
            let out = expand_main(
                quote!(#ident = 5),
                quote!(
                    fn main() {}
                ),
                enabled,
                false,
            );
            assert_error(&out, &format!("`{key}` {limit}"));
        }
    }
    let cases = [
        (
            quote!(report = "functions-timing,channels"),
            "`report` chooses hotpath's report sections; perflens has no section filter: it \
             prints every section that has data.",
        ),
        (
            quote!(timeout = 5000),
            "Stop it with SIGTERM or Ctrl-C, which still writes the whole report",
        ),
    ];
    for (args, message) in cases {
        for enabled in [true, false] {
            let out = expand_main(
                args.clone(),
                quote!(
                    fn main() {}
                ),
                enabled,
                false,
            );
            assert_error(&out, message);
            assert_error(&out, "see docs/migrating-from-hotpath.md");
        }
    }
    // Each rejected option is named, alongside the other problems.
    let out = expand_main(
        quote!(report = "all", functions_limit = 3, format = "xml"),
        quote!(
            fn main() {}
        ),
        true,
        false,
    );
    let all = errors(&out);
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(all[0].starts_with("`report` chooses"), "{all:?}");
    assert!(
        all[1].starts_with("`functions_limit` is hotpath's"),
        "{all:?}"
    );
    assert!(all[2].starts_with("unknown format \"xml\""), "{all:?}");
}

#[test]
fn measure_takes_future_true_on_an_async_fn_only() {
    let async_fn = quote!(
        async fn fetch() -> u8 {
            1
        }
    );
    let with = expand_measure(quote!(future = true), async_fn.clone(), true);
    let without = expand_measure(quote!(), async_fn.clone(), true);
    assert_no_error(&with);
    // What perflens does to every measured async fn anyway.
    assert_eq!(with.to_string(), without.to_string());
    let both = expand_measure(quote!(future = true, label = "get"), async_fn, true);
    assert_no_error(&both);
    assert!(contains(&both, "\"get\""), "{both}");

    for enabled in [true, false] {
        let sync = expand_measure(
            quote!(future = true),
            quote!(
                fn f() {}
            ),
            enabled,
        );
        assert_error(
            &sync,
            "`future = true` applies to an async fn only (as in hotpath): remove it here.",
        );
        let off = expand_measure(
            quote!(future = false),
            quote!(
                async fn f() {}
            ),
            enabled,
        );
        assert_error(
            &off,
            "perflens always measures an async fn as a future (polls, busy and wait time, \
             cancellations): remove `future = false`.",
        );
    }
}

#[test]
fn measures_hotpath_only_options_name_the_perflens_way() {
    let cases = [
        (
            quote!(log = true),
            "`log = true` sends each return value to hotpath's console; perflens records no values",
        ),
        (
            quote!(impl_type = "Worker"),
            "`impl_type` names the type of a method for hotpath; perflens finds it by itself \
             (a method's row is `module::Type::method`): remove `impl_type`",
        ),
    ];
    for (args, message) in cases {
        for enabled in [true, false] {
            let out = expand_measure(
                args.clone(),
                quote!(
                    fn f() -> u8 {
                        1
                    }
                ),
                enabled,
            );
            assert_error(&out, message);
        }
    }
    let out = expand_measure(
        quote!(threads = 2),
        quote!(
            fn f() {}
        ),
        true,
    );
    assert_error(
        &out,
        "unknown option `threads` for #[perflens::measure]: the valid options are `label` and `future`.",
    );
}
