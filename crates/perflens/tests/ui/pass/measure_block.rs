//! `perflens::measure_block!` with and without `.await`.
#![deny(warnings)]

fn sum_until(limit: u32) -> Result<u32, std::num::ParseIntError> {
    let parsed = perflens::measure_block!("parse", { "40".parse::<u32>()? });
    let total = perflens::measure_block!("sum", {
        let mut t = 0;
        for i in 0.. {
            if i == limit {
                break;
            }
            t += i;
        }
        t
    });
    for i in 0..3 {
        perflens::measure_block!("loop body", {
            if i == 1 {
                continue; // leaves the block: fine without `.await`
            }
        });
    }
    Ok(parsed + total)
}

fn tail() -> u32 {
    perflens::measure_block!("tail", { 7 })
}

async fn fetch(x: u32) -> u32 {
    tokio::task::yield_now().await;
    x
}

async fn pipeline() -> Result<u32, String> {
    let v = perflens::measure_block!("fetch", {
        let a = fetch(1).await;
        let b = 'outer: loop {
            loop {
                if fetch(2).await == 2 {
                    break 'outer 2;
                }
            }
        };
        let helper = |x: u32| -> Result<u32, String> { Ok(x.checked_add(1).ok_or("overflow")?) };
        helper(a + b)
    })?;
    let moved = String::from("owned");
    let len = perflens::measure_block!("borrow", { fetch(moved.len() as u32).await });
    Ok(v + len + moved.len() as u32)
}

fn main() {
    let session = perflens::Session::builder().ignore_env().start().unwrap();
    assert_eq!(sum_until(4).unwrap(), 46);
    assert_eq!(tail(), 7);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(pipeline()).unwrap(), 14);
    let report = session.finish();
    for (name, calls) in [
        ("parse", 1),
        ("sum", 1),
        ("loop body", 3),
        ("fetch", 1),
        ("borrow", 1),
        ("tail", 1),
    ] {
        let row = report
            .functions
            .iter()
            .find(|f| f.name == name)
            .expect(name);
        assert_eq!(row.calls, calls, "{name}");
    }
}
