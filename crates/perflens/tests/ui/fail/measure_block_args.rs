fn main() {
    let label = "work";
    let _ = perflens::measure_block!(label, { 1 });
    let _ = perflens::measure_block!("", { 1 });
    let _ = perflens::measure_block!("work", 1 + 1);
    let _ = perflens::measure_block!("work");
    let _ = perflens::measure_block!("work", { 1 }, { 2 });
    let _ = perflens::measure_block!();
}
