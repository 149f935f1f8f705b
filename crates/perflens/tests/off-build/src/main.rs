//! Every macro, with instrumentation compiled out.

#[perflens::measure]
fn add(a: u32, b: u32) -> u32 {
    a + b
}

struct S;

#[perflens::measure_all]
impl S {
    fn one(&self) -> u32 {
        1
    }

    #[perflens::skip]
    fn two(&self) -> u32 {
        2
    }
}

#[perflens::measure(label = "async work")]
async fn later(x: &u32) -> u32 {
    *x
}

#[perflens::main(percentiles = [50, 99.9], limit = 5, format = "table")]
fn main() {
    let x = perflens::measure_block!("block", { add(1, 2) });
    let _unused = later(&x);
    println!("off-build ok {}", x + S.one() + S.two());
}
