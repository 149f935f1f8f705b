struct Parser;

#[perflens::measure]
impl Parser {
    fn parse(&self) {}
}

#[perflens::measure]
mod helpers {}

#[perflens::measure]
struct Config;

#[perflens::measure]
const fn answer() -> u32 {
    42
}

trait Source {
    #[perflens::measure]
    fn fetch(&self);
}

fn main() {}
