//! Compile tests of the macros (trybuild): every supported item shape
//! compiles and runs with instrumentation on, and every misuse is rejected
//! with a clear message. Regenerate the expected messages with
//! `TRYBUILD=overwrite cargo test -p perflens --features enabled --test ui`.
#![cfg(feature = "enabled")]

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
