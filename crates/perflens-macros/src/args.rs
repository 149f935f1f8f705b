//! Parsing and validation of the `key = value` options the attributes take.

use proc_macro2::{Span, TokenStream as TokenStream2};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Token};

/// One `key = value` option as written by the user.
pub(crate) struct Arg {
    pub key: Ident,
    pub value: Expr,
}

/// Accumulates errors so the user sees every problem at once.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// Parses `key = value, key = value` (trailing comma allowed). `usage` is an
/// example of correct use, quoted in the error messages.
pub(crate) fn parse_key_values(args: TokenStream2, usage: &str) -> syn::Result<Vec<Arg>> {
    let parser = |input: ParseStream| -> syn::Result<Vec<Arg>> {
        let mut out = Vec::new();
        while !input.is_empty() {
            if input.peek(syn::LitStr) {
                let lit: LitStr = input.parse()?;
                return Err(syn::Error::new(
                    lit.span(),
                    format!(
                        "expected an option name, found a string: options are written as `key = value`, e.g. {usage}."
                    ),
                ));
            }
            let key = input.call(Ident::parse_any).map_err(|e| {
                syn::Error::new(e.span(), format!("expected an option name (options are written as `key = value`, e.g. {usage})."))
            })?;
            if !input.peek(Token![=]) {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "expected `=` and a value after `{key}` (options are written as `key = value`, e.g. {usage})."
                    ),
                ));
            }
            input.parse::<Token![=]>()?;
            let value: Expr = input.parse()?;
            out.push(Arg { key, value });
            if input.is_empty() {
                break;
            }
            if !input.peek(Token![,]) {
                return Err(input.error("expected `,` between options."));
            }
            input.parse::<Token![,]>()?;
        }
        Ok(out)
    };
    parser.parse2(args)
}

/// Checks every key against `valid` and reports unknown and duplicate ones.
/// Returns the options that may be interpreted.
pub(crate) fn check_keys<'a>(
    args: &'a [Arg],
    macro_name: &str,
    valid: &[&str],
    errors: &mut Errors,
) -> Vec<&'a Arg> {
    let mut seen: Vec<String> = Vec::new();
    let mut ok = Vec::new();
    for arg in args {
        let key = arg.key.to_string();
        if !valid.contains(&key.as_str()) {
            errors.push(syn::Error::new(
                arg.key.span(),
                unknown_option_message(&key, macro_name, valid),
            ));
        } else if seen.contains(&key) {
            errors.push(syn::Error::new(
                arg.key.span(),
                format!("duplicate option `{key}`: give it only once."),
            ));
        } else {
            seen.push(key);
            ok.push(arg);
        }
    }
    ok
}

fn unknown_option_message(key: &str, macro_name: &str, valid: &[&str]) -> String {
    let quoted: Vec<String> = valid.iter().map(|v| format!("`{v}`")).collect();
    match quoted.as_slice() {
        [] => format!("unknown option `{key}`: {macro_name} takes no options."),
        [one] => format!("unknown option `{key}` for {macro_name}: the only option is {one}."),
        [init @ .., last] => {
            format!(
                "unknown option `{key}` for {macro_name}: the valid options are {} and {last}.",
                init.join(", ")
            )
        }
    }
}

/// Looks through the invisible groups `macro_rules!` wraps around `$e:expr`.
pub(crate) fn strip_groups(mut expr: &Expr) -> &Expr {
    while let Expr::Group(group) = expr {
        expr = &group.expr;
    }
    expr
}

/// The value of an option that must be a non-empty string literal.
pub(crate) fn string_value(arg: &Arg, example: &str) -> syn::Result<LitStr> {
    match strip_groups(&arg.value) {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => {
            if s.value().trim().is_empty() {
                Err(syn::Error::new(
                    s.span(),
                    format!(
                        "`{}` must not be empty, e.g. `{} = {example}`.",
                        arg.key, arg.key
                    ),
                ))
            } else {
                Ok(s.clone())
            }
        }
        other => Err(syn::Error::new_spanned(
            other,
            format!(
                "`{}` must be a string literal, e.g. `{} = {example}`.",
                arg.key, arg.key
            ),
        )),
    }
}

/// The value of an option that must be `true` or `false`.
pub(crate) fn bool_value(arg: &Arg) -> syn::Result<bool> {
    match strip_groups(&arg.value) {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Ok(b.value),
        other => Err(syn::Error::new_spanned(
            other,
            format!(
                "`{}` must be `true` or `false`, e.g. `{} = true`.",
                arg.key, arg.key
            ),
        )),
    }
}

/// The value of an option that must be a positive integer literal fitting `max`.
pub(crate) fn positive_int_value(arg: &Arg, max: u64) -> syn::Result<u64> {
    let not_int = || {
        syn::Error::new_spanned(
            &arg.value,
            format!(
                "`{}` must be a positive integer literal, e.g. `{} = 20`.",
                arg.key, arg.key
            ),
        )
    };
    let Expr::Lit(ExprLit {
        lit: Lit::Int(int), ..
    }) = strip_groups(&arg.value)
    else {
        return Err(not_int());
    };
    let value: u64 = int.base10_parse().map_err(|_| not_int())?;
    if value == 0 {
        return Err(syn::Error::new(
            int.span(),
            format!("`{}` must be at least 1.", arg.key),
        ));
    }
    if value > max {
        return Err(syn::Error::new(
            int.span(),
            format!("`{}` must be at most {max}.", arg.key),
        ));
    }
    Ok(value)
}

/// The options of `#[perflens::measure]`.
#[derive(Default)]
pub(crate) struct MeasureArgs {
    /// `label = "parse"`: the row's name.
    pub label: Option<LitStr>,
    /// Where `future = true` (hotpath's name for what perflens does to
    /// every async fn) was given: only an async fn may take it.
    pub future: Option<Span>,
}

/// Parses `label = "..."` and `future = true`, the options of
/// `#[perflens::measure]`; hotpath's other options are rejected with the
/// perflens way ([`crate::hotpath::measure_option`]).
pub(crate) fn parse_measure_args(args: TokenStream2) -> syn::Result<MeasureArgs> {
    const USAGE: &str = "#[perflens::measure(label = \"parse\")]";
    let args = parse_key_values(args, USAGE)?;
    let mut errors = Errors::default();
    let mut out = MeasureArgs::default();
    let (hotpath, args): (Vec<Arg>, Vec<Arg>) = args
        .into_iter()
        .partition(|a| crate::hotpath::measure_option(&a.key.to_string()).is_some());
    for arg in &hotpath {
        let message = crate::hotpath::measure_option(&arg.key.to_string());
        errors.push(syn::Error::new(arg.key.span(), message.unwrap_or_default()));
    }
    let valid = ["label", "future"];
    for arg in check_keys(&args, "#[perflens::measure]", &valid, &mut errors) {
        if arg.key == "future" {
            match bool_value(arg) {
                Ok(true) => out.future = Some(arg.key.span()),
                Ok(false) => errors.push(syn::Error::new(
                    arg.key.span(),
                    "perflens always measures an async fn as a future (polls, busy and wait \
                     time, cancellations): remove `future = false`.",
                )),
                Err(e) => errors.push(e),
            }
            continue;
        }
        match string_value(arg, "\"parse\"") {
            Ok(lit) => out.label = Some(lit),
            Err(e) => errors.push(e),
        }
    }
    errors.finish()?;
    Ok(out)
}

/// Rejects any argument given to a macro that takes none.
pub(crate) fn expect_no_args(args: &TokenStream2, message: &str) -> syn::Result<()> {
    if args.is_empty() {
        Ok(())
    } else {
        Err(syn::Error::new_spanned(args, message))
    }
}

/// A string literal token carrying `span`.
pub(crate) fn str_lit(value: &str, span: Span) -> LitStr {
    LitStr::new(value, span)
}
