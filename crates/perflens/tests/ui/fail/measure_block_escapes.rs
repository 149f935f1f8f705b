async fn fetch() -> Result<u32, String> {
    Ok(1)
}

async fn try_inside() -> Result<u32, String> {
    let v = perflens::measure_block!("fetch", { fetch().await? });
    Ok(v)
}

async fn return_inside() -> u32 {
    perflens::measure_block!("fetch", {
        if fetch().await.is_err() {
            return 0;
        }
    });
    1
}

async fn loop_control() {
    for _ in 0..3 {
        perflens::measure_block!("step", {
            if fetch().await.is_err() {
                break;
            }
            if fetch().await == Ok(2) {
                continue;
            }
        });
    }
}

fn main() {
    let _ = (try_inside(), return_inside(), loop_control());
}
