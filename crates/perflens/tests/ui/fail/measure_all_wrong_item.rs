struct Engine;

#[perflens::measure_all]
fn start() {}

#[perflens::measure_all]
struct Config;

#[perflens::measure_all]
trait Source {
    fn fetch(&self);
}

#[perflens::measure_all(label = "engine")]
impl Engine {
    fn run(&self) {}
}

#[perflens::skip(always)]
fn skipped() {}

fn main() {
    start();
    skipped();
}
