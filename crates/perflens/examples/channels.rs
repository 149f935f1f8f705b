//! Data flow under perflens: a bounded crossbeam channel with a
//! producer that outruns its consumer, a std channel whose messages are
//! never all received, and a lock two threads take turns on.

use std::time::Duration;

#[perflens::main]
fn main() {
    let (tx, rx) = perflens::channel!(crossbeam_channel::bounded(4), label = "jobs");
    let producer = std::thread::spawn(move || {
        for i in 0..100u32 {
            tx.send(i).unwrap();
        }
    });
    let mut sum = 0;
    for v in rx.iter() {
        std::thread::sleep(Duration::from_micros(200));
        sum += v;
    }
    producer.join().unwrap();
    let (tx, rx) = perflens::channel!(std::sync::mpsc::channel());
    for i in 0..10u32 {
        tx.send(i).unwrap();
    }
    for _ in 0..7 {
        sum += rx.recv().unwrap();
    }
    drop((tx, rx));

    let totals = std::sync::Arc::new(perflens::lock!(
        perflens::sync::Mutex::new(0u64),
        label = "totals"
    ));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let totals = totals.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    let mut t = totals.lock().unwrap();
                    // Held for a while: the other thread waits.
                    std::thread::sleep(Duration::from_micros(100));
                    *t += i;
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    println!("sum {sum}, totals {}", totals.lock().unwrap());
}
