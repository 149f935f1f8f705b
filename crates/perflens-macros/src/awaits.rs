//! Await sites: inside a measured future (`#[measure] async fn`, the body
//! of `#[perflens::main] async fn`, `measure_block!` with `.await`) every
//! `expr.await` becomes
//!
//! ```ignore
//! ::perflens::__private::awaited(
//!     { static __PERFLENS_AWAIT: AwaitSite = AwaitSite::new(file!(), LINE, COL, "expr"); &__PERFLENS_AWAIT },
//!     expr,
//! ).await
//! ```
//!
//! which behaves as `expr.await` (`awaited` calls `into_future` where
//! `.await` would, and the generated `.await` keeps the user's tokens, so
//! diagnostics point at them) and records the await at its source line
//! and column.
//!
//! What is *not* rewritten, with the reason:
//!
//! - awaits inside closures (async closures included) and nested `async`
//!   blocks: they are other futures, which may be spawned or run after the
//!   enclosing one, where the enclosing future's frame is not below them;
//! - awaits inside nested items (functions, impls): not this function's;
//! - awaits inside macro invocations (`println!("{}", x.await)`,
//!   `tokio::select! { .. }`): rewriting them would mean re-emitting the
//!   macro's body from a parse of it, which breaks macros with their own
//!   syntax. Their time stays the enclosing function's.

use proc_macro2::{Delimiter, Spacing, Span, TokenStream as TokenStream2, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr, ExprAwait, LitStr};

/// Rewrites every `.await` of `block` (outside closures, async blocks,
/// items and macros) into a measured await site.
pub(crate) fn rewrite_awaits(block: &mut Block) {
    Rewriter.visit_block_mut(block);
}

struct Rewriter;

impl VisitMut for Rewriter {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        let Expr::Await(ExprAwait {
            base,
            dot_token,
            await_token,
            ..
        }) = expr
        else {
            visit_mut::visit_expr_mut(self, expr);
            return;
        };
        // The text is the user's, before the awaits inside are rewritten.
        let text = LitStr::new(&short_expr(base), Span::call_site());
        // Inner awaits first: `f(x.await).await` gives two sites.
        self.visit_expr_mut(base);
        // `line!()` and `column!()` invoked with the `.`'s span expand to
        // the line and column of the user's `.await` (the invocation's
        // call site is in the user's code, not in an expansion).
        let at = dot_token.span();
        let line = quote_spanned!(at=> ::core::line!());
        let column = quote_spanned!(at=> ::core::column!());
        let site = quote! {
            {
                #[allow(clippy::missing_docs_in_private_items)]
                static __PERFLENS_AWAIT: ::perflens::__private::AwaitSite =
                    ::perflens::__private::AwaitSite::new(::core::file!(), #line, #column, #text);
                &__PERFLENS_AWAIT
            }
        };
        // The call is spanned at the `.await`: an error about what cannot
        // be awaited points there.
        let awaited = quote_spanned!(await_token.span=> ::perflens::__private::awaited);
        let mut inner = std::mem::replace(&mut **base, Expr::Verbatim(TokenStream2::new()));
        // `(a + b).await` needs its parentheses, an argument does not
        // (`unused_parens` would fire on the user's code).
        if let Expr::Paren(paren) = inner {
            inner = if paren.attrs.is_empty() {
                *paren.expr
            } else {
                Expr::Paren(paren)
            };
        }
        **base = Expr::Verbatim(quote!(#awaited(#site, #inner)));
    }

    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
    fn visit_expr_async_mut(&mut self, _: &mut syn::ExprAsync) {}
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    fn visit_macro_mut(&mut self, _: &mut syn::Macro) {}
}

/// Longest text of an awaited expression, in chars (the cut adds `…`
/// within it).
const MAX_CHARS: usize = 40;

/// Marks a body left out of the text; printed as `{…}`.
const ELIDED: &str = "__perflens_elided";

/// The awaited expression's text for the report: its tokens as written,
/// without the spaces a token stream puts between them, with closure and
/// block bodies shown as `{…}`, cut to 40 characters.
pub(crate) fn short_expr(expr: &Expr) -> String {
    let mut expr = expr.clone();
    Elider.visit_expr_mut(&mut expr);
    let mut printer = Printer::default();
    printer.stream(expr.to_token_stream());
    let text = printer.out;
    if text.chars().count() <= MAX_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_CHARS - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// Replaces block and closure bodies by the [`ELIDED`] marker.
struct Elider;

impl VisitMut for Elider {
    fn visit_block_mut(&mut self, block: &mut Block) {
        let marker = syn::Ident::new(ELIDED, Span::call_site());
        block.stmts = vec![syn::Stmt::Expr(Expr::Verbatim(quote!(#marker)), None)];
    }
    fn visit_expr_closure_mut(&mut self, closure: &mut syn::ExprClosure) {
        let marker = syn::Ident::new(ELIDED, Span::call_site());
        *closure.body = Expr::Verbatim(quote!({ #marker }));
    }
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    fn visit_macro_mut(&mut self, _: &mut syn::Macro) {}
}

/// What was printed last, for the spacing rules.
#[derive(Clone, Copy, Default, PartialEq)]
enum Last {
    /// Nothing yet, or an opening delimiter: no space next.
    #[default]
    Open,
    /// An identifier, keyword or literal.
    Word,
    /// A closing delimiter.
    Close,
    /// A punctuation after which nothing is spaced (`.`, `::`, `&`, `!`,
    /// a turbofish `<`, `#`).
    Glue,
    /// Any other punctuation (`,`, `:`, `=`, `+`, `=>`, ...): a space next.
    Spaced,
}

/// Prints tokens compactly: `client.get(url).send()`, `f(a, b)`,
/// `x.map(|v| {…})`, `Vec::<u8>::new()`, `a + b`.
#[derive(Default)]
struct Printer {
    out: String,
    last: Last,
    /// Open turbofish generics (`::<`), whose `<`/`>` are glued.
    generics: u32,
}

impl Printer {
    fn space_unless(&mut self, glued: bool) {
        if !glued && !self.out.is_empty() {
            self.out.push(' ');
        }
    }

    fn stream(&mut self, tokens: TokenStream2) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Ident(ident) => {
                    self.space_unless(matches!(self.last, Last::Open | Last::Glue));
                    self.out.push_str(&ident.to_string());
                    self.last = Last::Word;
                }
                TokenTree::Literal(lit) => {
                    self.space_unless(matches!(self.last, Last::Open | Last::Glue));
                    self.out.push_str(&lit.to_string());
                    self.last = Last::Word;
                }
                TokenTree::Group(group) => self.group(group),
                TokenTree::Punct(first) => {
                    // A joint run of punctuation is one operator (`::`,
                    // `=>`, `!=`, `..=`). A lifetime's `'` is joint to
                    // the identifier after it, which the next turn prints.
                    let mut op = String::from(first.as_char());
                    let mut spacing = first.spacing();
                    while spacing == Spacing::Joint {
                        let Some(TokenTree::Punct(next)) = tokens.get(i + 1) else {
                            break;
                        };
                        op.push(next.as_char());
                        spacing = next.spacing();
                        i += 1;
                    }
                    self.punct(&op);
                }
            }
            i += 1;
        }
    }

    fn group(&mut self, group: &proc_macro2::Group) {
        let (open, close) = match group.delimiter() {
            Delimiter::Parenthesis => ("(", ")"),
            Delimiter::Bracket => ("[", "]"),
            Delimiter::Brace => ("{", "}"),
            Delimiter::None => {
                self.stream(group.stream());
                return;
            }
        };
        let brace = group.delimiter() == Delimiter::Brace;
        if brace {
            // `async {…}`, `S { a: 1 }`, but `m!{..}`.
            self.space_unless(matches!(self.last, Last::Open | Last::Glue));
            if group.stream().to_string() == ELIDED {
                self.out.push_str("{…}");
                self.last = Last::Close;
                return;
            }
        } else {
            // Calls and indexing glue: `f(x)`, `a[0]`, `m!(x)`, `f::<T>(x)`,
            // `(a)(b)`; otherwise spaced: `x = (a, b)`, `return (a)`.
            let glued = matches!(self.last, Last::Open | Last::Glue | Last::Close)
                || (self.last == Last::Word && !ends_with_keyword(&self.out));
            self.space_unless(glued);
        }
        self.out.push_str(open);
        let inner = group.stream();
        let padded = brace && !inner.is_empty();
        if padded {
            self.out.push(' ');
        }
        self.last = Last::Open;
        let generics = std::mem::take(&mut self.generics);
        self.stream(inner);
        self.generics = generics;
        if padded {
            self.out.push(' ');
        }
        self.out.push_str(close);
        self.last = Last::Close;
    }

    fn punct(&mut self, op: &str) {
        match op {
            "." | "::" | ".." | "..=" => {
                self.last = Last::Glue;
                self.out.push_str(op);
                return;
            }
            "?" => {
                self.out.push('?');
                self.last = Last::Close;
                return;
            }
            "," | ";" | ":" => {
                self.out.push_str(op);
                self.last = Last::Spaced;
                return;
            }
            "'" => {
                // A lifetime: `&'a str`, `'outer`.
                self.space_unless(matches!(self.last, Last::Open | Last::Glue));
                self.out.push('\'');
                self.last = Last::Glue;
                return;
            }
            _ => {}
        }
        // `<` right after `::` opens a turbofish: `Vec::<u8>::new()`.
        if op == "<" && self.out.ends_with("::") {
            self.generics += 1;
            self.out.push('<');
            self.last = Last::Glue;
            return;
        }
        if op == ">" && self.generics > 0 {
            self.generics -= 1;
            self.out.push('>');
            self.last = Last::Close;
            return;
        }
        let prefix = matches!(op, "&" | "!" | "*" | "-" | "#" | "&&")
            && (matches!(self.last, Last::Open | Last::Glue | Last::Spaced)
                || (self.last == Last::Word && ends_with_keyword(&self.out)));
        if op == "!" && self.last == Last::Word {
            // A macro invocation: `println!(..)`.
            self.out.push('!');
            self.last = Last::Glue;
        } else if prefix || (op == "&" && self.out.is_empty()) {
            // A prefix operator: `&x`, `!done`, `*p`, `-1`, `&&x`.
            self.space_unless(matches!(self.last, Last::Open | Last::Glue));
            self.out.push_str(op);
            self.last = Last::Glue;
        } else if op == "|" {
            // Closure bars glue to the parameters: `|x| {…}`; a binary
            // `a | b` keeps its spaces.
            let since = self
                .out
                .rfind(['(', '[', '{', ','])
                .map_or(self.out.as_str(), |i| &self.out[i..]);
            let closes = since.matches('|').count() % 2 == 1;
            let opens = !closes
                && (matches!(self.last, Last::Open | Last::Glue | Last::Spaced)
                    || self.out.ends_with("move"));
            self.space_unless(closes || matches!(self.last, Last::Open | Last::Glue));
            self.out.push('|');
            self.last = if opens { Last::Glue } else { Last::Spaced };
        } else {
            self.space_unless(matches!(self.last, Last::Open));
            self.out.push_str(op);
            self.last = Last::Spaced;
        }
    }
}

/// Whether the text ends with a keyword that a parenthesized expression
/// may follow (`return (a)`, `in (x)`), rather than a call's name.
fn ends_with_keyword(out: &str) -> bool {
    let word = out
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    matches!(
        word,
        "return" | "in" | "if" | "while" | "match" | "move" | "async" | "break" | "as" | "mut"
    )
}
