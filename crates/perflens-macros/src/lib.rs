//! Procedural macros of [perflens]. Use them through the `perflens` crate,
//! which re-exports them: `#[perflens::main]`, `#[perflens::measure]`,
//! `#[perflens::measure_all]`, `#[perflens::skip]` and
//! `perflens::measure_block!`.
//!
//! Without the `enabled` feature (which the `perflens` crate's own `enabled`
//! feature turns on) every macro checks its arguments and then expands to
//! its input unchanged, so instrumented code costs nothing. (The one
//! addition: `#[perflens::main(allocator = A)]` still declares `A` as the
//! global allocator; see [Allocations](#allocations).) Misuse is a
//! compile error in both configurations, so a build never starts failing
//! only when profiling is switched on.
//!
//! Generated code reaches the runtime only through `::perflens::__private`.
//!
//! # `#[perflens::measure]`
//!
//! Measures every call of a function: free functions, methods, trait-impl
//! methods, generic, `unsafe` and `extern` functions, functions returning
//! `impl Trait`, and `async fn`. The row is named `module::function` (or
//! `module::Type::method`); `#[perflens::measure(label = "parse")]` names it
//! `parse` instead. Signature, attributes and visibility are kept, and
//! early `return` and `?` keep working.
//!
//! Cost per call over an uninstrumented call, measured by `cargo run
//! --release -p perflens-bench` on the project's 2-core AMD EPYC machine
//! (see docs/overhead.md for the table): about 18 ns in timed mode, a little
//! less than its two `rdtsc` reads (9.6 ns each; the histogram update is
//! left for the next timed exit, so it overlaps with them), about 2 ns
//! count-only, about 3 ns sampled 1 in 64; nothing at all without the
//! `enabled` feature.
//!
//! A sync function gets a guard at the start of its body that records the
//! call when it is dropped. An `async fn` becomes a plain `fn` returning
//! `impl Future<Output = T>` (capturing every lifetime, exactly like the
//! `async fn`), whose future records the caller when it is *created* and
//! times each poll. When another attribute macro follows (such as
//! `#[tokio::test]`), the `async fn` is kept and its body is wrapped instead.
//!
//! Each `expr.await` in the body becomes an await site,
//! `::perflens::__private::awaited(&SITE, expr).await`, where `SITE` is a
//! `static AwaitSite` holding `file!()`, the line and column of the
//! `.await`, and the expression's text shortened to 40 characters. It
//! behaves as `expr.await` (same types, same evaluation order, `?` and
//! `return` inside `expr` unchanged) and records the await and the time
//! suspended there. The same holds in an async `#[perflens::main]` and in
//! `measure_block!` with `.await`. Awaits inside closures, nested `async`
//! blocks, nested items and macro invocations (`println!`, `select!`) are
//! left as they are: the first three belong to another future or
//! function, and a macro's tokens cannot be rewritten without re-emitting
//! its body from a parse, which breaks macros with their own syntax.
//!
//! `const fn` cannot be measured (the guard cannot run in const evaluation).
//!
//! # `#[perflens::measure_all]` and `#[perflens::skip]`
//!
//! On an `impl` block (inherent or trait) measures every method; on an
//! inline `mod name { ... }` measures every function, and recursively every
//! impl block and inline module inside. It takes no options. Functions
//! marked `#[perflens::skip]` (or `#[skip]` after `use perflens::skip`) are
//! left alone, as are `const fn` and functions that carry their own
//! `#[perflens::measure]` (say, to give a label). An impl block or module
//! inside a measured module can be skipped as a whole the same way.
//! `#[perflens::skip]` on its own expands to its item unchanged.
//!
//! # `#[perflens::main]`
//!
//! Runs a profiling session for the duration of the function, and prints
//! the report when it returns. The function itself is measured too. Options:
//!
//! - `percentiles = [50, 95, 99.9]`: latency percentiles to report, each
//!   greater than 0 and at most 100;
//! - `limit = 20`: the number of rows to print per table (`0`: every row);
//! - `format = "table" | "json" | "none"` (`"json-pretty"`, hotpath's
//!   name, is `"json"`: perflens's JSON is pretty-printed);
//! - `output_path = "report.txt"`: print the report into this file
//!   instead of on stderr (`PERFLENS_OUTPUT` overrides it);
//! - `mode = "timed" | "count" | "sampled"`: time every call (the default),
//!   only count calls, or time one call in `sample_every` (default 64) per
//!   callsite;
//! - `sample_every = N`: only with `mode = "sampled"`;
//! - `allocator = path::Type`: the global allocator of the program (see
//!   below);
//! - `live = true`: publish the session for `perflens top`;
//! - `trace = "out.pftrace"`: trace mode, written to that file.
//!
//! hotpath's options of `#[hotpath::main]` that perflens does not share
//! (`functions_limit` and the other per-section limits, `report`,
//! `timeout`) are compile errors that name the perflens way; so are
//! `log` and `impl_type` on `#[perflens::measure]`, which takes
//! hotpath's `future = true` on an async fn (what it does to every
//! async fn anyway). docs/migrating-from-hotpath.md maps the rest.
//!
//! ## Allocations
//!
//! With the `alloc` feature (which the `perflens` crate's own `alloc`
//! feature turns on, and which implies `enabled`), `#[perflens::main]`
//! also declares the program's global allocator, next to the function:
//!
//! ```ignore
//! #[global_allocator]
//! static __PERFLENS_GLOBAL_ALLOC: ::perflens::__private::CountingAlloc<A> =
//!     ::perflens::__private::CountingAlloc::new(A);
//! ```
//!
//! The counting allocator forwards every call to `A` and charges each
//! allocation to the innermost measured function. `A` is
//! `std::alloc::System` unless `allocator = path::Type` names another. The
//! path is used both as the type and as the value, so it must name a unit
//! struct, as `std::alloc::System`, `mimalloc::MiMalloc` and
//! `tikv_jemallocator::Jemalloc` are; anything else (`allocator = 5`,
//! `allocator = MyAlloc::new()`) is a compile error. For an allocator built
//! by an expression, define a unit struct that implements `GlobalAlloc` by
//! forwarding to it, and give that struct's path.
//!
//! Without the `alloc` feature (or with perflens off entirely),
//! `allocator = A` still declares `#[global_allocator] static
//! __PERFLENS_GLOBAL_ALLOC: A = A;`: switching profiling off must not
//! change which allocator the program runs on. Without `allocator` and
//! without `alloc`, nothing is added. Since a program has one global
//! allocator, do not declare another `#[global_allocator]` when perflens
//! declares one (give it to `allocator` instead), and put
//! `#[perflens::main]` on one function only.
//!
//! With an async runtime, either order works:
//!
//! ```ignore
//! #[tokio::main]
//! #[perflens::main]           // sees the sync `fn main` tokio generates
//! async fn main() {}
//!
//! #[perflens::main(limit = 10)] // keeps `async fn`, wraps the body
//! #[tokio::main]
//! async fn main() {}
//! ```
//!
//! # `perflens::measure_block!("label", { ... })`
//!
//! Measures a block under the given row name and evaluates to the block's
//! value. A block containing `.await` is run as an instrumented async block
//! and awaited; such a block cannot contain a `return`, `?`, `break` or
//! `continue` that would leave it (it would only leave the async block), so
//! those are rejected with an explanation.
//!
//! [perflens]: https://docs.rs/perflens

use proc_macro::TokenStream;

mod args;
mod awaits;
mod block;
mod flow;
mod hotpath;
mod main_fn;
mod measure;
mod measure_all;
#[cfg(test)]
mod tests;

/// Whether instrumentation is generated (the `enabled` feature).
const ENABLED: bool = cfg!(feature = "enabled");

/// Whether `#[perflens::main]` installs the counting allocator (the `alloc`
/// feature, which implies `enabled`).
const ALLOC: bool = cfg!(feature = "alloc");

/// Measures every call of a function. See the crate documentation.
#[proc_macro_attribute]
pub fn measure(args: TokenStream, item: TokenStream) -> TokenStream {
    measure::expand_measure(args.into(), item.into(), ENABLED).into()
}

/// Measures every function of an `impl` block or inline module. See the
/// crate documentation.
#[proc_macro_attribute]
pub fn measure_all(args: TokenStream, item: TokenStream) -> TokenStream {
    measure_all::expand_measure_all(args.into(), item.into(), ENABLED).into()
}

/// Excludes an item from `#[measure_all]`. See the crate documentation.
#[proc_macro_attribute]
pub fn skip(args: TokenStream, item: TokenStream) -> TokenStream {
    measure_all::expand_skip(args.into(), item.into()).into()
}

/// Runs a profiling session around a function (usually `main`). See the
/// crate documentation.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    main_fn::expand_main(args.into(), item.into(), ENABLED, ALLOC).into()
}

/// Measures a block: `measure_block!("label", { ... })`. See the crate
/// documentation.
#[proc_macro]
pub fn measure_block(input: TokenStream) -> TokenStream {
    block::expand_measure_block(input.into(), ENABLED).into()
}

/// Measures the channels a constructor makes:
/// `perflens::channel!(crossbeam_channel::bounded(8), label = "jobs")`.
/// See the crate documentation of `perflens::flow`.
#[proc_macro]
pub fn channel(input: TokenStream) -> TokenStream {
    flow::expand_channel(input.into(), ENABLED).into()
}
