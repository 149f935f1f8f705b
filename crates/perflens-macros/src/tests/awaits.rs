use proc_macro2::{TokenStream as TokenStream2, TokenTree};
use quote::{ToTokens, quote};
use syn::Block;

use super::{contains, count, squash};
use crate::awaits::{rewrite_awaits, short_expr};
use crate::block::expand_measure_block;
use crate::main_fn::expand_main;
use crate::measure::expand_measure;
use crate::measure_all::expand_measure_all;

const SITE: &str = "::perflens::__private::awaited";
const STATIC: &str = "static __PERFLENS_AWAIT";

fn rewrite(block: TokenStream2) -> TokenStream2 {
    let mut block: Block = syn::parse2(block).unwrap();
    rewrite_awaits(&mut block);
    block.into_token_stream()
}

fn text(expr: TokenStream2) -> String {
    short_expr(&syn::parse2(expr).unwrap())
}

/// The texts given to `AwaitSite::new`, in the order of the tokens.
fn site_texts(tokens: &TokenStream2) -> Vec<String> {
    let mut out = Vec::new();
    let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Ident(ident) if ident == "AwaitSite" => {
                // `AwaitSite :: new (file, line, column, "text")`
                if let (Some(TokenTree::Ident(new)), Some(TokenTree::Group(args))) =
                    (trees.get(i + 3), trees.get(i + 4))
                {
                    if new == "new" {
                        let last = args.stream().into_iter().last().unwrap();
                        let lit: syn::LitStr = syn::parse2(last.into_token_stream()).unwrap();
                        out.push(lit.value());
                    }
                }
            }
            TokenTree::Group(group) => out.extend(site_texts(&group.stream())),
            _ => {}
        }
    }
    out
}

#[test]
fn an_await_becomes_a_site_with_its_text() {
    let out = rewrite(quote!({
        let r = client.get(url).send().await;
        r
    }));
    assert_eq!(count(&out, SITE), 1);
    assert!(contains(
        &out,
        "let r = ::perflens::__private::awaited({ \
           #[allow(clippy::missing_docs_in_private_items)] \
           static __PERFLENS_AWAIT: ::perflens::__private::AwaitSite = \
             ::perflens::__private::AwaitSite::new(::core::file!(), ::core::line!(), ::core::column!(), \
               \"client.get(url).send()\"); \
           &__PERFLENS_AWAIT \
         }, client.get(url).send()).await; r"
    ));
}

#[test]
fn nested_awaits_give_a_site_each_inner_first() {
    let out = rewrite(quote!({ f(x.await).await }));
    assert_eq!(count(&out, SITE), 2);
    assert_eq!(count(&out, STATIC), 2);
    // The outer site's text is the expression as written, the inner one's
    // not rewritten into it.
    assert_eq!(site_texts(&out), ["f(x.await)", "x"]);
    assert!(contains(&out, "&__PERFLENS_AWAIT }, x).await)).await"));
    // A chain of awaits: `a().await.b().await`.
    let out = rewrite(quote!({ a().await.b().await }));
    assert_eq!(site_texts(&out), ["a().await.b()", "a()"]);
}

#[test]
fn awaits_in_closures_async_blocks_items_and_macros_are_left_alone() {
    for block in [
        quote!({
            let c = || async move { f().await };
            c
        }),
        quote!({
            let c = async |x| f(x).await;
            c
        }),
        quote!({
            let s = async { f().await };
            s
        }),
        quote!({
            let s = async move { f().await };
            s
        }),
        quote!({
            async fn inner() {
                f().await
            }
            inner
        }),
        quote!({
            struct S;
            impl S {
                async fn m(&self) {
                    f().await
                }
            }
            S
        }),
        quote!({ println!("{}", f().await) }),
        quote!({
            tokio::select! {
                x = f() => x,
            }
        }),
        quote!({ my_dsl!(x => f().await) }),
    ] {
        let out = rewrite(block.clone());
        assert_eq!(squash(&out), squash(&block));
    }
    // Next to a site, they stay as they are.
    let out = rewrite(quote!({
        let s = async { g().await };
        println!("{}", h().await);
        s.await
    }));
    assert_eq!(site_texts(&out), ["s"]);
    assert!(contains(&out, "async { g().await }"));
    assert!(contains(&out, "println!(\"{}\", h().await)"));
}

#[test]
fn attributes_try_and_return_are_kept() {
    let out = rewrite(quote!({
        let v = #[allow(unused)]
        f()?.await?;
        (if c { return 1 } else { g() }).await
    }));
    assert_eq!(count(&out, SITE), 2);
    assert!(contains(
        &out,
        "let v = #[allow(unused)] ::perflens::__private::awaited({"
    ));
    assert!(contains(&out, "}, f()?).await?;"));
    // The parentheses the `.await` needed are not kept in the argument.
    assert!(contains(&out, "}, if c { return 1 } else { g() }).await"));
    assert_eq!(site_texts(&out)[1], "(if c {…} else {…})");
}

#[test]
fn short_text_of_an_expression() {
    assert_eq!(
        text(quote!(client.get(url).send())),
        "client.get(url).send()"
    );
    // As a token stream prints it, spaced.
    let spaced: syn::Expr = syn::parse_str("client . get (url) . send ()").unwrap();
    assert_eq!(short_expr(&spaced), "client.get(url).send()");
    assert_eq!(text(quote!(f(a, &mut b, !c))), "f(a, &mut b, !c)");
    assert_eq!(
        text(quote!(std::future::ready(()))),
        "std::future::ready(())"
    );
    assert_eq!(text(quote!(Vec::<u8>::new())), "Vec::<u8>::new()");
    assert_eq!(text(quote!(x.get()?.next()?)), "x.get()?.next()?");
    assert_eq!(text(quote!(PendingN { left: 3 })), "PendingN { left: 3 }");
    assert_eq!(text(quote!(tx.send(a + 1))), "tx.send(a + 1)");
    assert_eq!(text(quote!(v[i].recv())), "v[i].recv()");
    assert_eq!(text(quote!(format!("{}", x))), "format!(\"{}\", x)");
    assert_eq!(text(quote!(a.b != c)), "a.b != c");
    assert_eq!(text(quote!(f(0..=n, x as u8))), "f(0..=n, x as u8)");
    assert_eq!(
        text(quote!(get::<'static>(s as &'static str))),
        "get::<'static>(s as &'static str)"
    );
    assert_eq!(text(quote!(lock(&mut *guard, -1))), "lock(&mut *guard, -1)");
    assert_eq!(text(quote!(a.b()?.c[0].d)), "a.b()?.c[0].d");
    // Bodies are left out.
    assert_eq!(
        text(quote!(async move {
            let x = f().await;
            x + 1
        })),
        "async move {…}"
    );
    assert_eq!(
        text(quote!(rt.spawn(|x| {
            heavy(x);
            x
        }))),
        "rt.spawn(|x| {…})"
    );
    assert_eq!(
        text(quote!(timeout(d, move || work()))),
        "timeout(d, move || {…})"
    );
    assert_eq!(text(quote!(a.map(|x| x * 2))), "a.map(|x| {…})");
    assert_eq!(
        text(quote!(tokio::spawn(async {}))),
        "tokio::spawn(async {…})"
    );
}

#[test]
fn a_long_text_is_cut_at_forty_chars() {
    let t = text(quote!(
        client
            .get("https://example.invalid/a/very/long/path")
            .send()
    ));
    assert_eq!(t.chars().count(), 40, "{t}");
    assert!(t.ends_with('…'), "{t}");
    assert!(t.starts_with("client.get(\"https://"), "{t}");
    // A `select`-like call with a long body.
    let t = text(quote!(select(
        first_branch_future(),
        second_branch_future(),
        third()
    )));
    assert_eq!(t, "select(first_branch_future(), second_br…");
    // Exactly 40 is kept whole, 41 is cut to 39 and `…`.
    let name = "abcdefghijklmnopqrstuvwxyzabcdefghijkl";
    let t = text(syn::parse_str(&format!("{name}()")).unwrap());
    assert_eq!(t, format!("{name}()"));
    let t = text(syn::parse_str(&format!("{name}x()")).unwrap());
    assert_eq!(t, format!("{name}x…"));
}

#[test]
fn non_ascii_text_stays_valid_and_quoted() {
    let t = text(quote!(envoyer(
        "déjà vu ✓ — «ünïcödé» ✓✓✓✓✓✓✓✓✓✓✓✓✓",
        données
    )));
    assert_eq!(t.chars().count(), 40, "{t}");
    assert!(t.starts_with("envoyer(\"déjà vu ✓"), "{t}");
    assert!(t.ends_with('…'));
    // In the expansion, the text is one string literal that reads back
    // as the same text (quotes and backslashes escaped).
    let out = rewrite(quote!({ send("a \"q\" \\ é").await }));
    assert_eq!(site_texts(&out), ["send(\"a \\\"q\\\" \\\\ é\")"]);
}

fn measured_async() -> TokenStream2 {
    quote! {
        async fn a(x: u32) -> u32 {
            let y = f(x).await;
            g(y).await
        }
    }
}

#[test]
fn measure_rewrites_the_body_of_an_async_fn_only() {
    let out = expand_measure(quote!(), measured_async(), true);
    assert_eq!(site_texts(&out), ["f(x)", "g(y)"]);
    // The measured future is returned, not awaited, so no other `.await`.
    assert_eq!(count(&out, ".await"), 2);
    // Under another attribute macro: the body is rewritten and awaited
    // whole, and that outer await is no site.
    let out = expand_measure(
        quote!(),
        quote! {
            #[tokio::test]
            async fn t() { f().await; }
        },
        true,
    );
    assert_eq!(site_texts(&out), ["f()"]);
    assert_eq!(count(&out, ".await"), 2);
    assert!(contains(
        &out,
        "async move { { ::perflens::__private::awaited({"
    ));
    // Sync functions have no site (an async block in them keeps its await).
    let sync = quote! { fn s() -> impl Future<Output = ()> { async { f().await } } };
    let out = expand_measure(quote!(), sync, true);
    assert_eq!(count(&out, SITE), 0);
}

#[test]
fn disabled_expansions_have_no_site() {
    let item = measured_async();
    assert_eq!(
        expand_measure(quote!(), item.clone(), false).to_string(),
        item.to_string()
    );
    let main = quote! { #[tokio::main] async fn main() { f().await; } };
    assert_eq!(
        expand_main(quote!(), main.clone(), false, false).to_string(),
        main.to_string()
    );
    let block = quote!({ f().await });
    assert_eq!(
        expand_measure_block(quote!("l", #block), false).to_string(),
        block.to_string()
    );
}

#[test]
fn async_main_and_awaiting_blocks_rewrite_their_awaits() {
    let main = quote! {
        #[tokio::main]
        async fn main() {
            work().await;
            let s = async { inner().await };
            s.await
        }
    };
    let out = expand_main(quote!(), main, true, false);
    assert_eq!(site_texts(&out), ["work()", "s"]);
    assert!(contains(&out, "async { inner().await }"));
    // The body's own `.await` (the measured future) comes after: 3 in all.
    assert_eq!(count(&out, ".await"), 4);
    assert!(contains(&out, "}).await }"));

    let out = expand_measure_block(quote!("io", { read(f).await.len() }), true);
    assert_eq!(site_texts(&out), ["read(f)"]);
    assert!(contains(
        &out,
        "&__PERFLENS_CS }, async { ::perflens::__private::awaited({"
    ));
    assert!(contains(&out, "}, read(f)).await.len() }).await"));
    // Awaits only inside a macro: an async block, with no site.
    let out = expand_measure_block(quote!("io", { println!("{}", f().await) }), true);
    assert_eq!(count(&out, SITE), 0);
    // A sync block is untouched.
    let out = expand_measure_block(quote!("cpu", { work() }), true);
    assert_eq!(count(&out, SITE), 0);
}

#[test]
fn measure_all_rewrites_each_async_method() {
    let imp = quote! {
        impl S {
            async fn a(&self) { f().await; }
            fn b(&self) -> u8 { 1 }
            #[perflens::skip]
            async fn c(&self) { g().await; }
            async fn d(&self) -> u8 { h().await }
        }
    };
    let out = expand_measure_all(quote!(), imp, true);
    assert_eq!(site_texts(&out), ["f()", "h()"]);
    assert!(contains(&out, "async fn c(&self) { g().await; }"));
}
