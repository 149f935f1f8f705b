//! A thread's peak live bytes: what it held at once (for a thread that
//! frees only what it allocated), and never "0 B" for a worker that allocated a megabyte
//! after freeing memory other threads allocated (its net live bytes were
//! negative throughout, and a peak of the net count read 0 B).
#![cfg(feature = "alloc")]

use perflens::Session;
use std::sync::mpsc;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

const PIECE: usize = 1024;
const PIECES: usize = 1024;

/// Allocates 1 MiB in 1 KiB pieces, holds them all, frees them.
fn megabyte_in_pieces() {
    let mut held: Vec<Box<[u8; PIECE]>> = Vec::with_capacity(PIECES);
    for i in 0..PIECES {
        held.push(Box::new([i as u8; PIECE]));
    }
    std::hint::black_box(&held);
}

/// Peak live bytes of the thread named `name`, and the bytes it
/// allocated in all.
fn peak(report: &perflens::Report, name: &str) -> (u64, u64) {
    let t = (report.threads.iter())
        .find(|t| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no thread {name}: {:?}", report.threads));
    (t.peak_live_bytes.unwrap(), t.alloc_bytes.unwrap())
}

#[test]
fn peak_live_bytes_are_per_thread() {
    let session = Session::builder().ignore_env().start().unwrap();
    // A thread that frees only what it allocates: exact (the pieces and
    // the vector holding them).
    std::thread::Builder::new()
        .name("own".into())
        .spawn(megabyte_in_pieces)
        .unwrap()
        .join()
        .unwrap();
    // A worker that first frees 2 MiB a producer allocated, then
    // allocates its megabyte.
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(0);
    let producer = std::thread::spawn(move || {
        for _ in 0..2 {
            tx.send(vec![1u8; 1 << 20]).unwrap();
        }
    });
    std::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            for v in rx {
                drop(std::hint::black_box(v));
            }
            megabyte_in_pieces();
        })
        .unwrap()
        .join()
        .unwrap();
    producer.join().unwrap();
    let report = session.finish();
    // What each thread holds at once: the pieces and the vector holding
    // them, and whatever std's start of the thread allocated on it and
    // still holds (its name, 3 bytes; 144 bytes in one loop run): between
    // the pieces and everything the thread allocated.
    let exact = (PIECE * PIECES + PIECES * size_of::<usize>()) as u64;
    let rows = || format!("{:?}", report.threads);
    for name in ["own", "worker"] {
        // The worker's live bytes were negative throughout (it freed 2
        // MiB it did not allocate); its peak counts from their lowest
        // point, so it is not 0 B.
        let (peak, allocated) = peak(&report, name);
        assert!(
            (exact..=allocated).contains(&peak) && allocated - exact < 4096,
            "{name}: peak {peak}, allocated {allocated}, the pieces {exact}: {}",
            rows()
        );
    }
}
