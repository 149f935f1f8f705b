//! `#[perflens::main]`: a profiling session around a function.

use std::fmt;

use proc_macro2::{Literal, Span, TokenStream as TokenStream2};
use quote::{ToTokens, quote};
use syn::{Expr, ExprLit, ExprPath, ExprUnary, Ident, Lit, UnOp, parse_quote};

use crate::args::{self, Arg, Errors};
use crate::measure;

const USAGE: &str = "#[perflens::main(limit = 20, format = \"json\")]";
const OPTIONS: &[&str] = &[
    "percentiles",
    "limit",
    "format",
    "mode",
    "sample_every",
    "allocator",
    "live",
    "trace",
    "output_path",
];

/// The options of `#[perflens::main]`, validated.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct MainOptions {
    pub percentiles: Option<Vec<f64>>,
    pub limit: Option<u64>,
    pub format: Option<&'static str>,
    pub mode: Option<Mode>,
    pub allocator: Option<Allocator>,
    pub live: Option<bool>,
    /// `trace = "out.pftrace"`: the file trace mode writes (`.json` or
    /// `.pftrace`).
    pub trace: Option<String>,
    /// `output_path = "report.txt"`: the file the report is printed to
    /// instead of stderr (hotpath's option of the same name).
    pub output_path: Option<String>,
}

/// `allocator = path::Type`: a unit-struct allocator, used both as the
/// type and as the value of the global allocator static.
pub(crate) struct Allocator(pub syn::Path);

impl fmt::Debug for Allocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Allocator({})", self.0.to_token_stream())
    }
}

impl PartialEq for Allocator {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_token_stream().to_string() == other.0.to_token_stream().to_string()
    }
}

#[derive(Debug, PartialEq)]
pub(crate) enum Mode {
    Timed,
    Count,
    Sampled { every: u32 },
}

/// Used when `mode = "sampled"` is given without `sample_every`.
const DEFAULT_SAMPLE_EVERY: u32 = 64;

/// Expands `#[perflens::main(args)] item`. `alloc` (the `alloc` feature)
/// installs the counting allocator; it has no effect unless `enabled`.
pub(crate) fn expand_main(
    args: TokenStream2,
    item: TokenStream2,
    enabled: bool,
    alloc: bool,
) -> TokenStream2 {
    let mut errors = Errors::default();
    let options = parse_main_args(args).map_err(|e| errors.push(e)).ok();
    let func = measure::parse_fn(item.clone(), "#[perflens::main]")
        .map_err(|e| errors.push(e))
        .ok();
    if let Err(e) = errors.finish() {
        return measure::with_error(e, item);
    }
    let (Some(options), Some(mut func)) = (options, func) else {
        return item;
    };
    let global_alloc = global_allocator(options.allocator.as_ref(), enabled && alloc);
    if !enabled {
        let mut out = item;
        out.extend(global_alloc);
        return out;
    }
    let session = Ident::new("__perflens_main", Span::mixed_site());
    let options = options_tokens(&options);
    let start = quote! {
        #[allow(clippy::needless_update)]
        let #session = ::perflens::__private::MainGuard::start(#options);
    };
    let label = args::str_lit("", Span::call_site());
    let block = &mut func.block;
    *block = if func.sig.asyncness.is_some() {
        // We run before the async runtime's attribute (e.g. `#[tokio::main]`
        // below us), which needs to see an `async fn`. The body's awaits
        // become sites, not the `.await` of the measured body added here.
        crate::awaits::rewrite_awaits(block);
        let cs = measure::callsite_ref(&label);
        let body = measure::typed_body(&func.sig.output, &TokenStream2::new(), block);
        parse_quote!({
            #start
            ::perflens::__private::instrument(#cs, async move #body).await
        })
    } else if let Some(body) = runtime_body(block) {
        // An async `main` that the runtime's attribute above us (e.g.
        // `#[tokio::main]`) already made sync: its body is the future the
        // runtime blocks on. That future is measured as `main`, so that
        // `main`'s self time is its busy time and its waiting is Wait,
        // and its awaits are sites, as in any measured future.
        if let Expr::Async(future) = &mut *body {
            crate::awaits::rewrite_awaits(&mut future.block);
        }
        let cs = measure::callsite_ref(&label);
        let future = body.clone();
        *body = parse_quote!(::perflens::__private::instrument(#cs, #future));
        parse_quote!({ #start #block })
    } else {
        let guard = measure::guard_stmt(&label);
        parse_quote!({ #start #guard #block })
    };
    let mut out = func.into_token_stream();
    out.extend(global_alloc);
    out
}

/// The future of a sync `main` made by an async runtime's attribute
/// from an `async fn main`: its first statement `let body = async { .. };`
/// with the block blocked on (`block_on(body)`) further down, as
/// `#[tokio::main]` writes it. `None` for any other body: that `main` is
/// measured as a sync function.
fn runtime_body(block: &mut syn::Block) -> Option<&mut Expr> {
    let blocks_on_body = block.stmts.iter().skip(1).any(|stmt| {
        let text = stmt.to_token_stream().to_string();
        text.contains("block_on") && text.contains("body")
    });
    let syn::Stmt::Local(local) = block.stmts.first_mut()? else {
        return None;
    };
    let syn::Pat::Ident(name) = &local.pat else {
        return None;
    };
    let init = local.init.as_mut()?;
    let is_async = matches!(*init.expr, Expr::Async(_));
    (name.ident == "body" && is_async && blocks_on_body && init.diverge.is_none())
        .then_some(&mut *init.expr)
}

/// The `#[global_allocator]` static emitted next to the function: the
/// counting allocator wrapping the requested allocator (default
/// `System`) when `counting`, otherwise the requested allocator itself,
/// so that turning profiling off never changes the program's allocator.
/// Nothing without `counting` and without `allocator = ...`.
fn global_allocator(allocator: Option<&Allocator>, counting: bool) -> TokenStream2 {
    let name = Ident::new("__PERFLENS_GLOBAL_ALLOC", Span::call_site());
    let inner = match allocator {
        Some(Allocator(path)) => path.to_token_stream(),
        None if counting => quote!(::std::alloc::System),
        None => return TokenStream2::new(),
    };
    if counting {
        let counting = quote!(::perflens::__private::CountingAlloc);
        quote! {
            #[global_allocator]
            static #name: #counting<#inner> = #counting::new(#inner);
        }
    } else {
        quote! {
            #[global_allocator]
            static #name: #inner = #inner;
        }
    }
}

/// `trace = "out.pftrace"`: a file name whose extension says the format.
fn trace_file(arg: &Arg) -> syn::Result<String> {
    let lit = args::string_value(arg, "\"trace.pftrace\"")?;
    let file = lit.value();
    let known = [".json", ".pftrace", ".perfetto-trace"];
    if known.iter().any(|ext| file.ends_with(ext)) {
        Ok(file)
    } else {
        Err(syn::Error::new(
            lit.span(),
            format!(
                "`trace` names the trace file, and its extension the format: \
                 \"{file}\" ends in none of .json (Chrome JSON) or .pftrace (Perfetto)."
            ),
        ))
    }
}

/// Parses and validates the options of `#[perflens::main]`.
pub(crate) fn parse_main_args(args: TokenStream2) -> syn::Result<MainOptions> {
    let args = args::parse_key_values(args, USAGE)?;
    let mut errors = Errors::default();
    let (hotpath, args): (Vec<Arg>, Vec<Arg>) = args
        .into_iter()
        .partition(|a| crate::hotpath::main_option(&a.key.to_string()).is_some());
    for arg in &hotpath {
        let message = crate::hotpath::main_option(&arg.key.to_string());
        errors.push(syn::Error::new(arg.key.span(), message.unwrap_or_default()));
    }
    let mut options = MainOptions::default();
    let mut sampled = false;
    let mut sample_every: Option<(u32, &Arg)> = None;
    for arg in args::check_keys(&args, "#[perflens::main]", OPTIONS, &mut errors) {
        let result = match arg.key.to_string().as_str() {
            "percentiles" => percentiles(arg).map(|p| options.percentiles = Some(p)),
            "limit" => limit(arg).map(|n| options.limit = Some(n)),
            // hotpath's "json-pretty" is perflens's "json", which is
            // pretty-printed.
            "format" => choice(arg, &["table", "json", "none", "json-pretty"]).map(|f| {
                options.format = Some(if f == "json-pretty" { "json" } else { f });
            }),
            "mode" => choice(arg, &["timed", "count", "sampled"]).map(|m| {
                sampled = m == "sampled";
                options.mode = Some(match m {
                    "timed" => Mode::Timed,
                    "count" => Mode::Count,
                    _ => Mode::Sampled {
                        every: DEFAULT_SAMPLE_EVERY,
                    },
                });
            }),
            "allocator" => allocator(arg).map(|a| options.allocator = Some(a)),
            "live" => args::bool_value(arg).map(|b| options.live = Some(b)),
            "trace" => trace_file(arg).map(|t| options.trace = Some(t)),
            "output_path" => args::string_value(arg, "\"report.txt\"")
                .map(|p| options.output_path = Some(p.value())),
            _ => args::positive_int_value(arg, u64::from(u32::MAX)).map(|n| {
                sample_every = Some((u32::try_from(n).unwrap_or(u32::MAX), arg));
            }),
        };
        if let Err(e) = result {
            errors.push(e);
        }
    }
    if let Some((every, arg)) = sample_every {
        if sampled {
            options.mode = Some(Mode::Sampled { every });
        } else {
            errors.push(syn::Error::new(
                arg.key.span(),
                "`sample_every` only applies to sampled timing: add `mode = \"sampled\"`, or remove `sample_every`.",
            ));
        }
    }
    errors.finish()?;
    Ok(options)
}

/// `limit = 20`: rows per terminal table; `0` (as in hotpath) prints
/// every row.
fn limit(arg: &Arg) -> syn::Result<u64> {
    if let Expr::Lit(ExprLit {
        lit: Lit::Int(int), ..
    }) = args::strip_groups(&arg.value)
        && int.base10_digits() == "0"
    {
        return Ok(0);
    }
    args::positive_int_value(arg, u64::from(u32::MAX))
}

/// `allocator = path::Type`: the path of a unit-struct allocator.
fn allocator(arg: &Arg) -> syn::Result<Allocator> {
    match args::strip_groups(&arg.value) {
        Expr::Path(ExprPath {
            attrs,
            qself: None,
            path,
        }) if attrs.is_empty() => Ok(Allocator(path.clone())),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Err(syn::Error::new(
            s.span(),
            format!(
                "`allocator` takes a path, not a string: write `allocator = {}` without quotes.",
                s.value()
            ),
        )),
        other => Err(syn::Error::new_spanned(
            other,
            "`allocator` must be the path of a unit-struct allocator, used both as its type and \
             its value, e.g. `allocator = std::alloc::System` or `allocator = mimalloc::MiMalloc`. \
             For an allocator built by an expression, define a unit struct that implements \
             `GlobalAlloc` by forwarding to it, and give that struct's path.",
        )),
    }
}

/// `percentiles = [50, 95, 99.9]`: numbers in (0, 100].
fn percentiles(arg: &Arg) -> syn::Result<Vec<f64>> {
    let Expr::Array(array) = args::strip_groups(&arg.value) else {
        return Err(syn::Error::new_spanned(
            &arg.value,
            "`percentiles` must be a list of numbers in brackets, e.g. `percentiles = [50, 95, 99.9]`.",
        ));
    };
    if array.elems.is_empty() {
        return Err(syn::Error::new_spanned(
            array,
            "`percentiles` must list at least one percentile, e.g. `[50, 99]`.",
        ));
    }
    let mut errors = Errors::default();
    let mut values = Vec::new();
    for elem in &array.elems {
        match percentile(elem) {
            Ok(value) => values.push(value),
            Err(e) => errors.push(e),
        }
    }
    errors.finish()?;
    Ok(values)
}

fn percentile(elem: &Expr) -> syn::Result<f64> {
    let (lit, negative) = match args::strip_groups(elem) {
        Expr::Lit(ExprLit { lit, .. }) => (lit, false),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => match args::strip_groups(expr) {
            Expr::Lit(ExprLit { lit, .. }) => (lit, true),
            _ => return Err(not_a_number(elem)),
        },
        _ => return Err(not_a_number(elem)),
    };
    let value = match lit {
        Lit::Int(int) => int.base10_parse::<f64>(),
        Lit::Float(float) => float.base10_parse::<f64>(),
        _ => return Err(not_a_number(elem)),
    }
    .map_err(|_| not_a_number(elem))?;
    let value = if negative { -value } else { value };
    if value > 0.0 && value <= 100.0 {
        Ok(value)
    } else {
        Err(syn::Error::new_spanned(
            elem,
            format!(
                "percentile {value} is out of range: each percentile must be greater than 0 and at most 100."
            ),
        ))
    }
}

fn not_a_number(elem: &Expr) -> syn::Error {
    syn::Error::new_spanned(
        elem,
        "each percentile must be a number literal such as `50` or `99.9`.",
    )
}

/// A string option whose value is one of `choices`.
fn choice(arg: &Arg, choices: &[&'static str]) -> syn::Result<&'static str> {
    let example = format!("\"{}\"", choices[0]);
    let lit = args::string_value(arg, &example)?;
    let value = lit.value();
    choices
        .iter()
        .copied()
        .find(|c| *c == value)
        .ok_or_else(|| {
            let list: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
            syn::Error::new(
                lit.span(),
                format!(
                    "unknown {} {:?}: expected one of {}.",
                    arg.key,
                    value,
                    list.join(", ")
                ),
            )
        })
}

/// The `::perflens::__private::MainOptions { .. }` expression.
fn options_tokens(options: &MainOptions) -> TokenStream2 {
    let p = quote!(::perflens::__private);
    let some = quote!(::core::option::Option::Some);
    let mut fields = TokenStream2::new();
    if let Some(percentiles) = &options.percentiles {
        let values = percentiles.iter().map(|v| Literal::f64_unsuffixed(*v));
        fields.extend(quote!(percentiles: #some(&[#(#values),*]),));
    }
    if let Some(limit) = options.limit {
        let limit = Literal::u64_unsuffixed(limit);
        fields.extend(quote!(limit: #some(#limit),));
    }
    if let Some(format) = options.format {
        let variant = match format {
            "table" => quote!(Table),
            "json" => quote!(Json),
            _ => quote!(None),
        };
        fields.extend(quote!(format: #some(#p::Format::#variant),));
    }
    if let Some(mode) = &options.mode {
        let mode = match mode {
            Mode::Timed => quote!(#p::Mode::Timed),
            Mode::Count => quote!(#p::Mode::Count),
            Mode::Sampled { every } => {
                let every = Literal::u32_unsuffixed(*every);
                quote!(#p::Mode::Sampled { every: #every })
            }
        };
        fields.extend(quote!(mode: #some(#mode),));
    }
    if let Some(live) = options.live {
        fields.extend(quote!(live: #some(#live),));
    }
    if let Some(trace) = &options.trace {
        fields.extend(quote!(trace: #some(#trace),));
    }
    if let Some(path) = &options.output_path {
        fields.extend(quote!(output_path: #some(#path),));
    }
    quote!(#p::MainOptions { #fields ..::core::default::Default::default() })
}
