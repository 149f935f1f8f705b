//! Handlers run around `fork`: `on_fork(prepare, parent, child)` has
//! `prepare` run in the forking thread just before the fork, `parent` in
//! it just after, and `child` in the child's one thread (Linux and
//! POSIX: `pthread_atfork`; they stay registered for the life of the process).
//! perflens-core's `session/fork.rs` takes every runtime lock in
//! `prepare` and releases them in the other two, so that a child never
//! hangs on a lock another thread of its parent held. Returns whether
//! the handlers are registered: the portable build has no `fork` to
//! handle ([`crate::Capabilities::fork_handling`]) and registers
//! nothing.

pub use crate::imp::fork::on_fork;

/// A handler run around `fork`.
pub type ForkHandler = extern "C" fn();

#[cfg(test)]
mod tests {
    extern "C" fn nothing() {}

    #[test]
    fn fork_handlers_register_where_there_is_fork() {
        assert_eq!(
            super::on_fork(nothing, nothing, nothing),
            crate::CAPABILITIES.fork_handling
        );
    }
}
