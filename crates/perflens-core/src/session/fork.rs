//! `fork` while another thread holds one of the runtime's locks.
//!
//! A forked child has one thread, a copy of the one that called `fork`.
//! A lock that another thread of the parent held at that moment stays
//! locked in the child for ever, and the child's first measured call (or
//! allocation, through the counting allocator) that needs it hangs: the
//! thread registry when a thread gets its block, the path table and the
//! callsite registry when a call path is new, the first-call hook.
//!
//! So the runtime takes all of its locks just before `fork`, in the one
//! order the rest of the code nests them (the session state, then the
//! thread registry, then the first-call hook, the path table and the
//! callsite registry, which are never held together, then the live
//! session's state, taken inside any of them), and releases them
//! just after, in the parent and in the child (`perflens_sys::fork`:
//! `pthread_atfork` on Linux, set up with the first session). No lock is held while the program's own code
//! runs, so the thread calling `fork` never holds one itself.
//!
//! With a live session, the child also stops publishing: it gets private
//! copies of the blocks, which are shared mappings of the parent's files
//! (see `publish.rs`).
//!
//! The guards are kept in a thread-local between the two handlers: the
//! child's one thread is a copy of the thread that ran the first handler,
//! thread-locals included.

use std::cell::RefCell;
use std::sync::{MutexGuard, Once};

struct Held {
    // Dropped in reverse order of locking (fields drop in declaration
    // order, so the last one locked comes first).
    _trace: Option<crate::trace::ForkHold>,
    live: MutexGuard<'static, Option<crate::publish::Publication>>,
    _callsites: MutexGuard<'static, Vec<crate::callsite::Entry>>,
    _paths: MutexGuard<'static, Option<crate::paths::Table>>,
    _hook: MutexGuard<'static, Option<fn()>>,
    threads: MutexGuard<'static, crate::thread::Registry>,
    _state: (MutexGuard<'static, bool>, MutexGuard<'static, u32>),
}

thread_local! {
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// Sets up the `fork` handlers, once per process.
pub(crate) fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Where there is no `fork` (the portable build) nothing is
        // registered, and nothing needs to be.
        perflens_sys::fork::on_fork(before_fork, after_fork, after_fork_child);
    });
}

extern "C" fn before_fork() {
    // Nothing the profiler does here is counted (and the allocator hook
    // must not take the thread registry while we hold it).
    let _internal = crate::hot::Internal::enter();
    let state = super::lock_state();
    let threads = crate::thread::registry();
    let hook = crate::hooks::lock_first_call_hook();
    let paths = crate::paths::lock();
    let callsites = crate::callsite::registry();
    let live = crate::publish::lock();
    let trace = crate::trace::lock_for_fork();
    let held = Held {
        _trace: trace,
        live,
        _callsites: callsites,
        _paths: paths,
        _hook: hook,
        threads,
        _state: state,
    };
    let _ = HELD.try_with(|h| *h.borrow_mut() = Some(held));
}

extern "C" fn after_fork() {
    let _internal = crate::hot::Internal::enter();
    let _ = HELD.try_with(|h| h.borrow_mut().take());
}

/// The child's side: as [`after_fork`], after making the child's blocks
/// private if a live session runs (its files are the parent's: see
/// `publish.rs`).
extern "C" fn after_fork_child() {
    let _internal = crate::hot::Internal::enter();
    let _ = HELD.try_with(|h| {
        if let Some(mut held) = h.borrow_mut().take() {
            if held.live.is_some() {
                privatize_after_fork(&mut held.threads);
            }
            crate::publish::forget_after_fork(&mut held.live);
        }
    });
}

/// In a forked child (every runtime lock held in `reg`, the child's only
/// thread running): gives every live block a private copy of its
/// contents, so that the child never writes into its parent's files.
fn privatize_after_fork(reg: &mut crate::thread::Registry) {
    for b in reg.blocks() {
        if b.header().live != 0 {
            // SAFETY: only this thread runs, and `b` is a whole block.
            unsafe { crate::publish::privatize(b) };
        }
    }
}
