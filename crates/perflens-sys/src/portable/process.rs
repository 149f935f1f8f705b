//! No view of other processes in `std`.

/// Unknown: 0.
pub fn start_time(_pid: u32) -> u64 {
    0
}

/// Unknown: `false`.
pub fn alive(_pid: u32) -> bool {
    false
}
