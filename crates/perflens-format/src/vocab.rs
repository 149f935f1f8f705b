//! Names shared by the runtime and its readers.

/// What a flow site measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowKind {
    /// A channel: messages sent and received.
    Channel,
    /// A stream: items polled out of it.
    Stream,
    /// A future wrapped by `perflens::future!`.
    Future,
    /// A mutex or read-write lock.
    Lock,
}

/// Path index of the root.
pub const ROOT_PATH: u32 = 0;
/// Path index that collects calls which did not fit in a table.
pub const OVERFLOW_PATH: u32 = 1;

/// Default node capacity per thread (`PERFLENS_NODES`). 1024 distinct
/// calling contexts per thread covers every program we have profiled.
/// The address space reserved per thread is about 45 MiB for the
/// histograms of 1024 nodes plus four times the thread's stack size for
/// the shadow stack (53 MiB for a thread with a 2 MiB stack), of which
/// only touched pages cost memory.
pub const DEFAULT_NODES: u32 = 1024;
/// Default shadow-stack depth (`PERFLENS_STACK_DEPTH`): 0, as deep as
/// each thread's own stack allows (its stack size / 16 frames, address
/// space reserved without memory; see docs/timing-and-paths.md). A non-zero depth is
/// a fixed limit: measured calls nested deeper are counted as dropped.
pub const DEFAULT_STACK_DEPTH: u32 = 0;

/// How a call to a function already on the stack is recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Recursion {
    /// Charged to the node where the function is outermost, as a nested
    /// call: a recursion of any depth is a handful of nodes (default).
    #[default]
    Fold,
    /// One node (and path) per depth (`PERFLENS_RECURSION=expand`).
    Expand,
}

/// Default sampling period for `Mode::Sampled` (`PERFLENS_SAMPLE_EVERY`).
pub const DEFAULT_SAMPLE_EVERY: u32 = 64;
/// Default warm-up of `Mode::Sampled` (`PERFLENS_SAMPLE_WARMUP`): the
/// first calls of each calling context that are all timed.
pub const DEFAULT_SAMPLE_WARMUP: u32 = 64;

/// A thread publishes its live bytes to the process-wide counter when
/// they moved by this much since the last time (so the process's peak
/// is known to within this many bytes a thread).
pub const PUBLISH_STEP: i64 = 64 * 1024;
