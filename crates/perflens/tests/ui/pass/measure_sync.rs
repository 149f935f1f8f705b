//! `#[perflens::measure]` on every sync function shape, and the row names.
#![deny(warnings)]

use std::fmt::Display;

/// Doc comments are kept.
#[perflens::measure]
#[inline]
pub fn free(x: u32) -> u32 {
    if x == 0 {
        return 1; // early return
    }
    x + 1
}

#[perflens::measure(label = "parse")]
fn parse(s: &str) -> Result<u32, std::num::ParseIntError> {
    let v: u32 = s.parse()?;
    Ok(v)
}

#[perflens::measure]
fn generic<T: Display + Clone>(t: &T) -> String
where
    T: Send,
{
    t.to_string()
}

#[perflens::measure]
fn evens(n: u32) -> impl Iterator<Item = u32> {
    (0..n).filter(|x| x % 2 == 0)
}

#[perflens::measure]
unsafe fn read(p: *const u32) -> u32 {
    unsafe { *p }
}

#[perflens::measure]
extern "C" fn doubled(a: i32) -> i32 {
    a * 2
}

#[perflens::measure]
fn slice(v: &Vec<u32>) -> &[u32] {
    v // coerced to the declared type
}

#[perflens::measure]
fn boxed(big: bool) -> Box<dyn Display> {
    if big {
        return Box::new(1000);
    }
    Box::new("small")
}

#[cfg(any())]
#[perflens::measure]
fn compiled_out() -> NotAType {}

#[perflens::measure]
#[cfg(all())]
fn compiled_in() {}

#[perflens::measure]
#[must_use]
#[allow(clippy::needless_pass_by_value)]
fn with_attrs(s: String) -> usize {
    s.len()
}

#[perflens::measure]
fn recursive(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        recursive(n - 1) + recursive(n - 2)
    }
}

#[perflens::measure]
fn items_inside() -> u32 {
    let a = 1;
    fn helper() -> u32 {
        2
    }
    const K: u32 = 3;
    a + helper() + K
}

struct Counter {
    n: u32,
}

impl Counter {
    #[perflens::measure]
    fn new() -> Self {
        Counter { n: 0 }
    }
    #[perflens::measure]
    fn bump(&mut self) -> &mut Self {
        self.n += 1;
        self
    }
    #[perflens::measure]
    fn get(&self) -> u32 {
        self.n
    }
}

struct Wrapper<T>(T);

impl<T: Clone> Wrapper<T> {
    #[perflens::measure]
    fn inner(&self) -> T {
        self.0.clone()
    }
}

impl Display for Counter {
    #[perflens::measure]
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.n)
    }
}

/// The row name without the crate (trybuild names the crate).
fn short(name: &str) -> &str {
    name.split_once("::").map_or(name, |(_, rest)| rest)
}

fn main() {
    let session = perflens::Session::builder().ignore_env().start().unwrap();
    assert_eq!(free(0), 1);
    assert_eq!(free(1), 2);
    assert_eq!(parse("3").unwrap(), 3);
    assert!(parse("x").is_err());
    assert_eq!(generic(&5), "5");
    assert_eq!(evens(5).count(), 3);
    assert_eq!(unsafe { read(&9) }, 9);
    assert_eq!(doubled(2), 4);
    assert_eq!(slice(&vec![1, 2]).len(), 2);
    assert_eq!(boxed(true).to_string(), "1000");
    assert_eq!(boxed(false).to_string(), "small");
    compiled_in();
    assert_eq!(with_attrs("abc".into()), 3);
    assert_eq!(recursive(10), 55);
    assert_eq!(items_inside(), 6);
    let mut c = Counter::new();
    assert_eq!(c.bump().bump().get(), 2);
    assert_eq!(c.to_string(), "2");
    assert_eq!(Wrapper(7).inner(), 7);
    let report = session.finish();

    let calls = |name: &str| {
        let row = report.functions.iter().find(|f| short(&f.name) == name);
        row.unwrap_or_else(|| {
            let names: Vec<&str> = report.functions.iter().map(|f| f.name.as_str()).collect();
            panic!("no row {name:?} in {names:?}")
        })
        .calls
    };
    assert_eq!(calls("free"), 2);
    assert_eq!(calls("parse"), 2);
    assert_eq!(calls("generic"), 1);
    assert_eq!(calls("evens"), 1);
    assert_eq!(calls("read"), 1);
    assert_eq!(calls("doubled"), 1);
    assert_eq!(calls("recursive"), 177);
    assert_eq!(calls("Counter::new"), 1);
    assert_eq!(calls("Counter::bump"), 2);
    assert_eq!(calls("Wrapper::inner"), 1);
    assert_eq!(calls("<Counter as Display>::fmt"), 1);
}
