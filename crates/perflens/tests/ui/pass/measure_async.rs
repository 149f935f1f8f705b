//! `#[perflens::measure]` on `async fn` of every shape. The futures keep
//! the borrowing rules of an `async fn` (every lifetime captured), stay
//! `Send` when the body is, and record their caller when created.
#![deny(warnings)]

use std::fmt::Display;
use std::sync::Arc;

struct Store {
    rows: Vec<u32>,
}

trait Source {
    async fn fetch(&self, key: &str) -> usize;
    fn plain(&self) -> u32;
}

impl Store {
    #[perflens::measure]
    async fn rows(&self) -> &[u32] {
        tokio::task::yield_now().await;
        &self.rows // coerced from &Vec<u32>, as in an async fn
    }

    #[perflens::measure]
    async fn push(&mut self, x: u32) {
        tokio::task::yield_now().await;
        self.rows.push(x);
    }

    #[perflens::measure]
    async fn two_refs<'a>(&self, a: &'a str, b: &str) -> &'a str {
        let _ = (b, self.rows.len());
        a
    }

    #[perflens::measure]
    async fn shared(self: Arc<Self>) -> usize {
        tokio::task::yield_now().await;
        self.rows.len()
    }

    #[perflens::measure]
    async fn patterns((a, b): (u32, u32), _: String, mut c: u32) -> u32 {
        c += 1;
        a + b + c
    }

    #[perflens::measure]
    async fn fallible(s: &str) -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
        let v: u32 = s.parse()?;
        if v == 7 {
            return Err("seven".into());
        }
        Ok(v)
    }

    #[perflens::measure(label = "describe")]
    async fn describe(d: impl Display, w: impl Into<String>) -> impl Display {
        format!("{d}{}", w.into())
    }

    #[perflens::measure]
    async fn generic<X>(x: X) -> Vec<X>
    where
        X: Clone + Send,
    {
        vec![x.clone(), x]
    }
}

impl Source for Store {
    #[perflens::measure]
    async fn fetch(&self, key: &str) -> usize {
        tokio::task::yield_now().await;
        self.rows.len() + key.len()
    }

    #[perflens::measure]
    fn plain(&self) -> u32 {
        1
    }
}

#[perflens::measure]
pub async fn free_fn() {}

#[perflens::measure]
async fn caller(store: Arc<Store>) -> usize {
    // Created here, polled on another worker thread: still our child.
    let handle = tokio::spawn(store.clone().shared());
    handle.await.unwrap() + store.fetch("k").await
}

/// The row name without the crate (trybuild names the crate).
fn short(name: &str) -> &str {
    name.split_once("::").map_or(name, |(_, rest)| rest)
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let session = perflens::Session::builder().ignore_env().start().unwrap();
    let mut store = Store { rows: vec![1] };
    store.push(2).await;
    assert_eq!(store.rows().await, &[1, 2]);
    let a = String::from("a");
    let r = store.two_refs(&a, &String::from("b")).await;
    assert_eq!(r, "a");
    assert_eq!(Store::patterns((1, 2), String::new(), 3).await, 7);
    assert!(Store::fallible("7").await.is_err());
    assert!(Store::fallible("x").await.is_err());
    assert_eq!(Store::fallible("8").await.unwrap(), 8);
    assert_eq!(Store::describe(1, "x").await.to_string(), "1x");
    assert_eq!(Store::generic(4).await, vec![4, 4]);
    assert_eq!(store.plain(), 1);
    free_fn().await;
    let store = Arc::new(store);
    assert_eq!(assert_send(caller(store.clone())).await, 5);
    assert_eq!(
        tokio::spawn(async move { store.fetch("xy").await })
            .await
            .unwrap(),
        4
    );
    let report = session.finish();

    let row = |name: &str| {
        report
            .functions
            .iter()
            .find(|f| short(&f.name) == name)
            .unwrap_or_else(|| {
                let names: Vec<&str> = report.functions.iter().map(|f| f.name.as_str()).collect();
                panic!("no row {name:?} in {names:?}")
            })
    };
    assert_eq!(row("Store::rows").calls, 1);
    assert_eq!(row("Store::fallible").calls, 3);
    assert_eq!(row("describe").calls, 1);
    assert_eq!(row("Store::shared").calls, 1);
    assert_eq!(row("free_fn").calls, 1);
    assert_eq!(row("caller").calls, 1);
    let nested = report.paths.iter().any(|p| {
        let names: Vec<&str> = p.frames.iter().map(|f| short(f)).collect();
        names.ends_with(&["caller", "Store::shared"])
    });
    assert!(nested, "the spawned future is recorded under its creator");
}
