//! A process-wide memory barrier: every running thread of the process
//! passes a full barrier before [`run`] returns. Linux has it as
//! `membarrier` (private expedited: a few microseconds; global: a
//! scheduler grace period). Elsewhere there is none ([`Kind::None`]), and
//! the runtime makes its owners swap instead.

/// Which barrier this process can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `MEMBARRIER_CMD_PRIVATE_EXPEDITED`, registered for this process.
    PrivateExpedited,
    /// `MEMBARRIER_CMD_GLOBAL`.
    Global,
    /// No process-wide barrier.
    None,
}

/// `find()`: the best barrier the kernel offers, registering this
/// process for the private expedited one when it can. `run(kind)`: runs
/// barrier `kind` (one `find` returned); `false` if it failed (or is
/// [`Kind::None`]).
pub use crate::imp::barrier::{find, run};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_barrier_found_runs() {
        let kind = find();
        // Linux has had membarrier since 4.3 (private expedited since
        // 4.14): the machines perflens runs on have one of the two. The
        // portable build has none.
        assert_eq!(kind != Kind::None, crate::CAPABILITIES.process_barrier);
        assert_eq!(run(kind), kind != Kind::None);
    }
}
