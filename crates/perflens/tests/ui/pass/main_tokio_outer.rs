//! `#[tokio::main]` first: `#[perflens::main]` sees the sync `fn main`
//! tokio generates.
#![deny(warnings)]

#[perflens::measure]
async fn step(i: u32) -> u32 {
    tokio::task::yield_now().await;
    i
}

#[tokio::main]
#[perflens::main(format = "json", limit = 3)]
async fn main() {
    let mut total = 0;
    for i in 0..4 {
        total += tokio::spawn(step(i)).await.unwrap();
    }
    assert_eq!(total, 6);
}
