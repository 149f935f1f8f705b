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

/// With `enabled` off, `channel!` is the constructor call and the
/// `perflens::flow` names are the backends' own types.
fn channels() {
    use std::any::{type_name, type_name_of_val};
    let (tx, rx) = perflens::channel!(crossbeam_channel::bounded::<u32>(1), label = "jobs");
    assert_eq!(
        type_name_of_val(&tx),
        type_name::<crossbeam_channel::Sender<u32>>()
    );
    assert_eq!(
        type_name::<perflens::flow::crossbeam::Sender<u32>>(),
        type_name::<crossbeam_channel::Sender<u32>>()
    );
    assert_eq!(
        type_name::<perflens::flow::crossbeam::Receiver<u32>>(),
        type_name_of_val(&rx)
    );
    let (stx, srx) = perflens::channel!(std::sync::mpsc::sync_channel::<u32>(1));
    assert_eq!(
        type_name_of_val(&stx),
        type_name::<std::sync::mpsc::SyncSender<u32>>()
    );
    assert_eq!(
        type_name::<perflens::flow::std::Receiver<u32>>(),
        type_name_of_val(&srx)
    );
    assert_eq!(
        type_name::<perflens::flow::std::Sender<u32>>(),
        type_name::<std::sync::mpsc::Sender<u32>>()
    );
    // A probe does nothing, and compiles.
    static PROBE: perflens::flow::Probe = perflens::flow::Probe::channel("queue");
    PROBE.created(Some(1));
    let stamp = PROBE.stamp();
    PROBE.sent(Some(1));
    PROBE.received(stamp);
    assert_eq!(stamp, perflens::flow::Stamp::default());
    tx.send(1).unwrap();
    stx.send(2).unwrap();
    assert_eq!(rx.recv().unwrap() + srx.recv().unwrap(), 3);
}

#[perflens::main(percentiles = [50, 99.9], limit = 5, format = "table")]
fn main() {
    channels();
    let x = perflens::measure_block!("block", { add(1, 2) });
    let _unused = later(&x);
    println!("off-build ok {}", x + S.one() + S.two());
}
