//! The `perflens` command's library: the live view (`perflens top`), so
//! that its benchmark (`benches/refresh.rs`) measures the very code the
//! command runs. The command itself is `src/main.rs`.

pub mod top;
