//! `perflens::channel!(constructor(args), label = "...", latency = false)`.
//!
//! Off: the constructor call, untouched. On: the same call made for
//! messages wrapped in `perflens::flow::Envelope<T>` (its message type
//! becomes `Envelope<_>`, or `Envelope<T>` when the call names `T`), its
//! capacity argument evaluated once and passed on, and the endpoints it
//! returns wrapped by `perflens::flow::Wrap`, which picks the backend from
//! their types. So the call may be spelled any way (`bounded(8)` after a
//! `use`, a full path), and the channel is made once, by its own
//! constructor: its capacity and behaviour are the original's.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, ExprCall, ExprPath, GenericArgument, LitBool, LitStr, PathArguments, Token};

/// The macro's input: the constructor call, then options.
struct Input {
    call: Expr,
    label: Option<LitStr>,
    latency: Option<LitBool>,
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Input> {
        let call: Expr = input.parse()?;
        let mut out = Input {
            call,
            label: None,
            latency: None,
        };
        while input.parse::<Token![,]>().is_ok() {
            if input.is_empty() {
                break;
            }
            let key: syn::Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            match key.to_string().as_str() {
                "label" if out.label.is_none() => out.label = Some(input.parse()?),
                "latency" if out.latency.is_none() => out.latency = Some(input.parse()?),
                "label" | "latency" => {
                    return Err(syn::Error::new(key.span(), format!("`{key}` given twice")));
                }
                _ => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "unknown option `{key}`: expected `label = \"...\"` or `latency = false`"
                        ),
                    ));
                }
            }
        }
        Ok(out)
    }
}

/// Constructors whose single argument is the channel's capacity (in
/// every backend that has one of these names).
fn takes_capacity(name: &str, args: usize, path: &syn::Path) -> bool {
    let watch = path.segments.iter().any(|s| s.ident == "watch");
    match name {
        "bounded" | "sync_channel" => args == 1,
        // tokio mpsc and broadcast, futures mpsc; not tokio's watch
        // (its argument is the first value).
        "channel" => args == 1 && !watch,
        _ => false,
    }
}

pub fn expand_channel(input: TokenStream, enabled: bool) -> TokenStream {
    let parsed: Input = match syn::parse2(input) {
        Ok(p) => p,
        Err(e) => return e.to_compile_error(),
    };
    if !enabled {
        return parsed.call.into_token_stream();
    }
    let Expr::Call(ExprCall { func, args, .. }) = &parsed.call else {
        return syn::Error::new_spanned(
            &parsed.call,
            "perflens::channel! takes a channel constructor call, such as \
             `crossbeam_channel::bounded(8)` or `tokio::sync::mpsc::unbounded_channel()`",
        )
        .to_compile_error();
    };
    let Expr::Path(ExprPath { path, qself, .. }) = &**func else {
        return syn::Error::new_spanned(func, "expected the constructor's path").to_compile_error();
    };
    if qself.is_some() {
        return syn::Error::new_spanned(func, "expected a plain path to the constructor")
            .to_compile_error();
    }
    let mut path = path.clone();
    let Some(last) = path.segments.last_mut() else {
        return syn::Error::new_spanned(func, "expected the constructor's path").to_compile_error();
    };
    let name = last.ident.to_string();
    let envelope = quote!(::perflens::flow::Envelope);
    match &mut last.arguments {
        PathArguments::None => {
            last.arguments = PathArguments::AngleBracketed(syn::parse_quote!(::<#envelope<_>>));
        }
        PathArguments::AngleBracketed(generics) => {
            let mut types = generics.args.iter_mut().filter_map(|a| match a {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            });
            match (types.next(), types.next()) {
                (Some(t), None) => *t = syn::parse_quote!(#envelope<#t>),
                _ => {
                    return syn::Error::new_spanned(
                        &last.ident,
                        "expected one message type argument, as in `bounded::<u32>(8)`",
                    )
                    .to_compile_error();
                }
            }
        }
        PathArguments::Parenthesized(_) => {
            return syn::Error::new_spanned(func, "expected the constructor's path")
                .to_compile_error();
        }
    }
    let label = parsed
        .label
        .unwrap_or_else(|| LitStr::new("", Span::call_site()));
    let latency = parsed
        .latency
        .unwrap_or_else(|| LitBool::new(true, Span::call_site()));
    let site = quote! {
        static __PERFLENS_FLOW_SITE: ::perflens::__private::FlowSite =
            ::perflens::__private::FlowSite::new(
                ::perflens::__private::FlowKind::Channel,
                #label,
                ::core::file!(),
                ::core::line!(),
                ::core::column!(),
                #latency,
            );
    };
    let span = parsed.call.span_or_call_site();
    if takes_capacity(&name, args.len(), &path) {
        let cap = &args[0];
        quote_spanned! {span=> {
            #site
            let __perflens_capacity: usize = #cap;
            ::perflens::flow::Wrap::wrap(
                #path(__perflens_capacity),
                &__PERFLENS_FLOW_SITE,
                ::core::option::Option::Some(__perflens_capacity),
            )
        }}
    } else {
        let mut args: Punctuated<Expr, Token![,]> = args.clone();
        // tokio's watch channel holds a value, made with its first one.
        if path.segments.iter().any(|s| s.ident == "watch") && args.len() == 1 {
            let first = &args[0];
            args[0] = syn::parse_quote!(::perflens::flow::Envelope::unsent(#first));
        }
        quote_spanned! {span=> {
            #site
            ::perflens::flow::Wrap::wrap(
                #path(#args),
                &__PERFLENS_FLOW_SITE,
                ::core::option::Option::None,
            )
        }}
    }
}

/// The span of an expression's first token, for error messages.
trait SpanOf {
    fn span_or_call_site(&self) -> Span;
}

impl SpanOf for Expr {
    fn span_or_call_site(&self) -> Span {
        self.to_token_stream()
            .into_iter()
            .next()
            .map_or_else(Span::call_site, |t| t.span())
    }
}
