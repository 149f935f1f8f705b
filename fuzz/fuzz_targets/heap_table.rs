//! The heap profiler's sample table on arbitrary operations: inserts,
//! removes, sweeps and reads agree with a map, the table refuses an
//! entry only when full, and its count of entries stays exact.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    perflens_core::heap::check_table_ops(data);
});
