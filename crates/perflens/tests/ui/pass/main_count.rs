//! `#[perflens::main]` with the default table output, count mode.
#![deny(warnings)]

#[perflens::measure]
fn work() {}

#[perflens::main(mode = "count", format = "table")]
fn main() {
    work();
}
