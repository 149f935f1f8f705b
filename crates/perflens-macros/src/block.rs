//! `perflens::measure_block!("label", { ... })`.

use proc_macro2::{Span, TokenStream as TokenStream2, TokenTree};
use quote::{ToTokens, quote};
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Block, Expr, LitStr, Macro, Token};

use crate::args::Errors;

const USAGE: &str = "measure_block!(\"parse\", { work() })";

/// Expands `measure_block!(input)`.
pub(crate) fn expand_measure_block(input: TokenStream2, enabled: bool) -> TokenStream2 {
    let (label, mut block) = match parse_input.parse2(input) {
        Ok(parsed) => parsed,
        Err(e) => return e.to_compile_error(),
    };
    let has_await = contains_await(&block);
    if has_await {
        if let Err(e) = check_no_escapes(&block) {
            // Keep the code (spliced, so no `unused_braces` warning) so that
            // no follow-up errors appear about what it declares or uses.
            let errors = e.to_compile_error();
            let stmts = &block.stmts;
            return quote!({ #errors #(#stmts)* });
        }
    }
    if !enabled {
        // The block itself, but in braces spanned by the macro: the user's
        // own braces would make `unused_braces` fire where the block is a
        // function's tail (`fn f() -> u8 { measure_block!("x", { 1 }) }`).
        let stmts = &block.stmts;
        return quote!({ #(#stmts)* });
    }
    let callsite = quote! {
        #[allow(clippy::items_after_statements, clippy::missing_docs_in_private_items)]
        static __PERFLENS_CS: ::perflens::__private::Callsite = ::perflens::__private::Callsite::new(#label, || "");
    };
    if has_await {
        // The block's awaits become sites; the `.await` of the measured
        // block itself, added here, does not.
        crate::awaits::rewrite_awaits(&mut block);
        quote! {
            ::perflens::__private::instrument({ #callsite &__PERFLENS_CS }, async #block).await
        }
    } else {
        // The statements are spliced, not nested in their block: a nested
        // `{ expr }` would trip the `unused_braces` lint on the user's code.
        let guard = syn::Ident::new("__perflens_guard", Span::mixed_site());
        let stmts = &block.stmts;
        quote! {
            {
                let #guard = { #callsite ::perflens::__private::Guard::enter(&__PERFLENS_CS) };
                #(#stmts)*
            }
        }
    }
}

/// An error at the next token, or at the whole invocation when the input
/// ends (`ParseStream::error` would prefix "unexpected end of input").
fn error_here(input: ParseStream, message: String) -> syn::Error {
    if input.is_empty() {
        syn::Error::new(Span::call_site(), message)
    } else {
        input.error(message)
    }
}

fn parse_input(input: ParseStream) -> syn::Result<(LitStr, Block)> {
    if input.is_empty() {
        let message = format!("measure_block! expects a label and a block, e.g. {USAGE}.");
        return Err(error_here(input, message));
    }
    if !input.peek(syn::LitStr) {
        let message = format!(
            "the first argument of measure_block! must be a string literal naming the row, e.g. {USAGE}."
        );
        return Err(error_here(input, message));
    }
    let label: LitStr = input.parse()?;
    if label.value().trim().is_empty() {
        return Err(syn::Error::new(
            label.span(),
            "the label of measure_block! must not be empty.",
        ));
    }
    if !input.peek(Token![,]) {
        let message = format!("expected `,` and a block after the label, e.g. {USAGE}.");
        return Err(error_here(input, message));
    }
    input.parse::<Token![,]>()?;
    if !input.peek(syn::token::Brace) {
        let message = format!(
            "the second argument of measure_block! must be a block in braces, e.g. {USAGE}."
        );
        return Err(error_here(input, message));
    }
    let block: Block = input.parse()?;
    if input.peek(Token![,]) {
        input.parse::<Token![,]>()?;
    }
    if !input.is_empty() {
        let message = format!(
            "measure_block! takes exactly two arguments, a string literal label and a block, e.g. {USAGE}."
        );
        return Err(error_here(input, message));
    }
    Ok((label, block))
}

/// Visits the body of a macro invocation when it parses as expressions or
/// statements. Returns false when it does not (a custom syntax).
fn visit_macro_body<V: for<'a> Visit<'a>>(mac: &Macro, visitor: &mut V) -> bool {
    if let Ok(exprs) = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated) {
        for expr in &exprs {
            visitor.visit_expr(expr);
        }
        return true;
    }
    if let Ok(stmts) = mac.parse_body_with(Block::parse_within) {
        for stmt in &stmts {
            visitor.visit_stmt(stmt);
        }
        return true;
    }
    false
}

/// Whether the block awaits, outside nested closures, async blocks and items.
pub(crate) fn contains_await(block: &Block) -> bool {
    let mut finder = AwaitFinder(false);
    finder.visit_block(block);
    finder.0
}

struct AwaitFinder(bool);

impl<'ast> Visit<'ast> for AwaitFinder {
    fn visit_expr_await(&mut self, _: &'ast syn::ExprAwait) {
        self.0 = true;
    }
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    fn visit_item(&mut self, _: &'ast syn::Item) {}
    fn visit_macro(&mut self, mac: &'ast Macro) {
        if !visit_macro_body(mac, self) && tokens_contain_await(mac.tokens.clone()) {
            self.0 = true;
        }
    }
}

/// A raw scan for `. await` through every group.
fn tokens_contain_await(tokens: TokenStream2) -> bool {
    let mut after_dot = false;
    for token in tokens {
        match token {
            TokenTree::Punct(p) if p.as_char() == '.' => {
                after_dot = true;
                continue;
            }
            TokenTree::Ident(i) if after_dot && i == "await" => return true,
            TokenTree::Group(g) if tokens_contain_await(g.stream()) => return true,
            _ => {}
        }
        after_dot = false;
    }
    false
}

/// Rejects `return`, `?`, and `break`/`continue` leaving the block: inside
/// the async block the macro generates they cannot keep their meaning.
fn check_no_escapes(block: &Block) -> syn::Result<()> {
    let mut finder = EscapeFinder {
        loops: 0,
        labels: Vec::new(),
        errors: Errors::default(),
    };
    finder.visit_block(block);
    finder.errors.finish()
}

struct EscapeFinder {
    /// Loops entered inside the block (targets of an unlabeled `break`).
    loops: usize,
    /// Labels of loops and blocks inside the block.
    labels: Vec<String>,
    errors: Errors,
}

const PREFIX: &str = "measure_block! around code containing `.await` runs it as an async block, so";

impl EscapeFinder {
    fn error(&mut self, tokens: impl ToTokens, message: &str) {
        self.errors.push(syn::Error::new_spanned(
            tokens,
            format!("{PREFIX} {message}"),
        ));
    }

    fn in_scope(
        &mut self,
        label: Option<&syn::Label>,
        is_loop: bool,
        visit: impl FnOnce(&mut Self),
    ) {
        if let Some(label) = label {
            self.labels.push(label.name.ident.to_string());
        }
        self.loops += usize::from(is_loop);
        visit(self);
        self.loops -= usize::from(is_loop);
        if label.is_some() {
            self.labels.pop();
        }
    }

    fn leaves(&self, label: Option<&syn::Lifetime>) -> bool {
        match label {
            Some(label) => !self.labels.contains(&label.ident.to_string()),
            None => self.loops == 0,
        }
    }
}

impl<'ast> Visit<'ast> for EscapeFinder {
    fn visit_expr_return(&mut self, node: &'ast syn::ExprReturn) {
        self.error(
            node.return_token,
            "`return` here would return from the block, not the function: make the value the block's result and return outside the macro.",
        );
        visit::visit_expr_return(self, node);
    }
    fn visit_expr_try(&mut self, node: &'ast syn::ExprTry) {
        self.error(
            node.question_token,
            "`?` here would return from the block, not the function: compute the Result inside and apply `?` outside the macro.",
        );
        visit::visit_expr_try(self, node);
    }
    fn visit_expr_break(&mut self, node: &'ast syn::ExprBreak) {
        if self.leaves(node.label.as_ref()) {
            self.error(
                node.break_token,
                "`break` here could not leave the loop outside it: make the decision the block's result and break outside the macro.",
            );
        }
        visit::visit_expr_break(self, node);
    }
    fn visit_expr_continue(&mut self, node: &'ast syn::ExprContinue) {
        if self.leaves(node.label.as_ref()) {
            self.error(
                node.continue_token,
                "`continue` here could not reach the loop outside it: make the decision the block's result and continue outside the macro.",
            );
        }
    }
    fn visit_expr_loop(&mut self, node: &'ast syn::ExprLoop) {
        self.in_scope(node.label.as_ref(), true, |v| {
            visit::visit_expr_loop(v, node)
        });
    }
    fn visit_expr_while(&mut self, node: &'ast syn::ExprWhile) {
        self.in_scope(node.label.as_ref(), true, |v| {
            visit::visit_expr_while(v, node)
        });
    }
    fn visit_expr_for_loop(&mut self, node: &'ast syn::ExprForLoop) {
        self.in_scope(node.label.as_ref(), true, |v| {
            visit::visit_expr_for_loop(v, node)
        });
    }
    fn visit_expr_block(&mut self, node: &'ast syn::ExprBlock) {
        self.in_scope(node.label.as_ref(), false, |v| {
            visit::visit_expr_block(v, node)
        });
    }
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    fn visit_expr_const(&mut self, _: &'ast syn::ExprConst) {}
    fn visit_item(&mut self, _: &'ast syn::Item) {}
    fn visit_macro(&mut self, mac: &'ast Macro) {
        visit_macro_body(mac, self);
    }
}
