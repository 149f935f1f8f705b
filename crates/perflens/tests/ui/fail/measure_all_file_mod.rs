#[perflens::measure_all]
mod elsewhere;

fn main() {}
