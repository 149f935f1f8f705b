#[perflens::main(allocator = 5)]
fn number() {}

#[perflens::main(allocator = "std::alloc::System")]
fn string() {}

#[perflens::main(allocator = MyAlloc::new())]
fn constructor_call() {}

#[perflens::main(allocator = std::alloc::System, allocator = std::alloc::System)]
fn duplicate() {}

fn main() {}
