#[perflens::measure(lable = "parse")]
fn a() {}

#[perflens::measure(label = parse)]
fn b() {}

#[perflens::measure(label = "")]
fn c() {}

#[perflens::measure(label = "x", label = "y")]
fn d() {}

#[perflens::measure("parse")]
fn e() {}

#[perflens::measure(label)]
fn f() {}

fn main() {
    a();
    b();
    c();
    d();
    e();
    f();
}
