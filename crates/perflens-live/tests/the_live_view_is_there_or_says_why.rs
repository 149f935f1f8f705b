//! Whether this build has a live view (`perflens_sys::CAPABILITIES`), a
//! session and the reader agree: on Linux a session asked for one
//! publishes its directory under `perflens_live::root()`; in the portable
//! build (`--cfg perflens_portable`, as on a platform without a port)
//! the session records without one and the reader's `root()` is an error
//! that says why, which `perflens list`, `snapshot` and `top` print.

#[perflens::measure]
fn work(i: u64) -> u64 {
    std::hint::black_box(i * 3)
}

#[test]
fn a_session_publishes_where_the_build_has_a_live_view_and_says_why_elsewhere() {
    let session = perflens::Session::builder()
        .ignore_env()
        .live(true)
        .start()
        .unwrap();
    let sum: u64 = (0..10).map(work).sum();
    assert_eq!(sum, 135);
    let root = perflens_live::root();
    if perflens_sys::CAPABILITIES.live_view {
        let root = root.expect("a live root");
        let dir = session.live_dir().expect("published").to_path_buf();
        assert!(dir.starts_with(&root), "{dir:?} not under {root:?}");
        assert!(dir.is_dir());
    } else {
        assert!(session.live_dir().is_none());
        let err = root.expect_err("no live root").to_string();
        assert!(
            err.contains("the live view is not available on this platform")
                && err.contains(perflens_sys::CAPABILITIES.platform),
            "{err}"
        );
    }
    // The session records either way.
    let report = session.finish();
    let row = report
        .function(&format!("{}::work", module_path!()))
        .expect("a row");
    assert_eq!(row.calls, 10);
}
