//! Awaiting what is not a future inside a measured `async fn`: the error
//! points at the user's `.await`, as without the macro.

#[perflens::measure]
async fn not_a_future() -> u32 {
    let n = 5u32;
    n.await
}

fn main() {
    let _ = not_a_future();
}
