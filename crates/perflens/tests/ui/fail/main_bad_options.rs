#[perflens::main(percentiles = [50, 0, 100.5])]
fn percentile_out_of_range() {}

#[perflens::main(percentiles = 99)]
fn percentiles_not_a_list() {}

#[perflens::main(format = "xml")]
fn unknown_format() {}

#[perflens::main(mode = fast)]
fn mode_not_a_string() {}

#[perflens::main(mode = "fast")]
fn unknown_mode() {}

#[perflens::main(sample_every = 10)]
fn sample_every_without_sampled() {}

#[perflens::main(mode = "sampled", sample_every = 0)]
fn sample_every_zero() {}

#[perflens::main(threads = 4)]
fn unknown_option() {}

#[perflens::main]
struct NotAFunction;

fn main() {}
