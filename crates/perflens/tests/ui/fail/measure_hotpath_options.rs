//! hotpath 0.30.3's `#[hotpath::measure]` options that perflens does not
//! take, and `future = true` where hotpath refuses it too.

#[perflens::measure(log = true)]
fn logged() -> u32 {
    42
}

struct Worker;

impl Worker {
    #[perflens::measure(impl_type = "Worker")]
    fn run(&self) {}
}

#[perflens::measure(future = true)]
fn not_async() {}

#[perflens::measure(future = false)]
async fn not_tracked() {}

fn main() {
    logged();
    Worker.run();
    not_async();
    drop(not_tracked());
}
