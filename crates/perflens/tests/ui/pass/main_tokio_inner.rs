//! `#[perflens::main]` first: it sees the `async fn main`, keeps it async
//! for `#[tokio::main]`, and may return a `Result`.
#![deny(warnings)]

#[perflens::measure]
async fn step(i: u32) -> u32 {
    tokio::task::yield_now().await;
    i
}

#[perflens::main(format = "none", mode = "timed")]
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), String> {
    let total = step(1).await + step(2).await;
    if total != 3 {
        return Err(format!("total {total}"));
    }
    Ok(())
}
