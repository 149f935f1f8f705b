//! Every `.await` of a measured future becomes an await site: the code
//! keeps its types, borrows, `?`, `return`, `break` and `continue`, its
//! evaluation order, `IntoFuture` and `Send`, with warnings denied.
#![deny(warnings)]
#![deny(clippy::all)]

use std::future::{IntoFuture, Ready, ready};
use std::sync::Mutex;

/// Not a future itself: awaited through `IntoFuture`.
struct Later(u32);

impl IntoFuture for Later {
    type Output = u32;
    type IntoFuture = Ready<u32>;
    fn into_future(self) -> Ready<u32> {
        ready(self.0 + 1)
    }
}

fn parse_later(s: &str) -> Result<Ready<u32>, std::num::ParseIntError> {
    Ok(ready(s.parse::<u32>()?))
}

async fn plus(a: u32, b: u32) -> u32 {
    tokio::task::yield_now().await;
    a + b
}

fn is<T>(_: &T) {}

static ORDER: Mutex<Vec<&str>> = Mutex::new(Vec::new());

fn step(name: &'static str) -> Ready<()> {
    ORDER.lock().unwrap().push(name);
    ready(())
}

struct Conn {
    rows: Vec<String>,
}

impl Conn {
    #[perflens::measure]
    async fn first(&mut self, key: &str) -> Option<&String> {
        plus(1, 2).await;
        self.rows.push(key.to_owned());
        self.rows.first()
    }
}

#[perflens::measure]
async fn control_flow(s: &str) -> Result<u32, std::num::ParseIntError> {
    // `?` after, and inside, the awaited expression.
    let n = ready(s.parse::<u32>()).await?;
    let m = parse_later(s)?.await;
    // `return` inside the awaited expression.
    let r = (if n == 0 { return Ok(0) } else { ready(n) }).await;
    // Nested awaits, and a chain.
    let nested = plus(ready(n).await, plus(1, 1).await).await;
    let chained = ready(ready(m)).await.await;
    // `IntoFuture`, and inference from the use.
    let later = Later(n).await;
    let inferred: u8 = ready(Default::default()).await;
    // Types are those of a plain `.await`.
    let text = ready(s).await;
    is::<&str>(&text);
    is::<u32>(&later);
    // `break` and `continue` around awaits.
    let mut i = 0;
    let found = loop {
        i += 1;
        match ready(i).await {
            1 => continue,
            k if k > 3 => break k,
            _ => {}
        }
    };
    // Evaluation order: the awaited expression is evaluated, then awaited,
    // where it is written.
    step("a").await;
    let second = async { step("c").await };
    step("b").await;
    second.await;
    Ok(n + m + r + nested + chained + later + u32::from(inferred) + found)
}

#[perflens::measure]
async fn in_block() -> Result<u32, String> {
    let v = perflens::measure_block!("block", {
        let x = plus(1, 2).await;
        Ok::<_, String>(x)
    })?;
    Ok(v)
}

#[perflens::measure_all]
impl Conn {
    async fn all(&self) -> usize {
        plus(1, 1).await as usize + self.rows.len()
    }
}

/// A site in a generic function is one static for every instance.
#[perflens::measure]
async fn generic<T: Clone + Send>(t: T) -> (T, T) {
    (ready(t.clone()).await, t)
}

/// Recursion through a boxed future.
#[perflens::measure]
async fn depth(n: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    1 + Box::pin(depth(n - 1)).await
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let v = tokio::spawn(assert_send(control_flow("1"))).await.unwrap();
        // 1 + 1 + 1 + (1 + 2) + 1 + 2 + 0 + 4
        assert_eq!(v, Ok(13));
        assert_eq!(control_flow("0").await, Ok(0));
        assert!(control_flow("x").await.is_err());
        assert_eq!(*ORDER.lock().unwrap(), ["a", "b", "c"]);
        assert_eq!(tokio::spawn(assert_send(in_block())).await.unwrap(), Ok(3));
        let mut conn = Conn { rows: Vec::new() };
        assert_eq!(conn.first("k").await.map(String::as_str), Some("k"));
        assert_eq!(conn.all().await, 3);
        assert_eq!(generic(1u8).await, (1, 1));
        assert_eq!(generic("s").await, ("s", "s"));
        assert_eq!(tokio::spawn(assert_send(depth(3))).await.unwrap(), 3);
    });
}
