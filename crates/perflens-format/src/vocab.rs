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
