//! Linux's fork handlers: `pthread_atfork`.

use crate::fork::ForkHandler;

/// Registers the three handlers (see [`crate::fork`]). `true` unless the
/// C library has no memory for them.
pub fn on_fork(prepare: ForkHandler, parent: ForkHandler, child: ForkHandler) -> bool {
    // SAFETY: the three handlers are `extern "C"` functions that live for
    // the whole process; pthread_atfork copies the pointers.
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) == 0 }
}
