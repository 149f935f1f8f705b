//! Calls from low modules up to higher, optional ones, through function
//! pointers the higher module installs (as the CPU sampler's handler
//! hooks do), so that the low module does not import it. Only cold paths
//! come here: a new callsite or path, the first allocation, a thread's
//! first call of a session (its block from a live session's files, the
//! first-call hook; attaching the thread's
//! block goes through `hot::prepare`'s own slot).

use perflens_format::block::{Block, Layout};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where the registries' names records go: `(kind, payload writer)`.
pub(crate) type RecordSink = fn(u8, &mut dyn FnMut(&mut Vec<u8>));

static RECORD_SINK: AtomicUsize = AtomicUsize::new(0);
static ALLOC_INSTALLED: AtomicUsize = AtomicUsize::new(0);

/// Sends the names records to `sink` from now on (the live session's
/// names file; installed when one begins, and it drops records while
/// none runs).
pub(crate) fn set_record_sink(sink: RecordSink) {
    RECORD_SINK.store(sink as usize, Ordering::Release);
}

/// Emits one names record of `kind` whose payload `payload` writes, if a
/// sink is installed. Called with the lock of the table the record comes
/// from held, so that records of one table keep their order.
pub(crate) fn emit(kind: u8, payload: impl FnOnce(&mut Vec<u8>)) {
    let f = RECORD_SINK.load(Ordering::Acquire);
    if f == 0 {
        return;
    }
    // SAFETY: only `set_record_sink` stores a non-zero value here, and it
    // stores a `RecordSink`.
    let f = unsafe { std::mem::transmute::<usize, RecordSink>(f) };
    let mut payload = Some(payload);
    f(kind, &mut |r| {
        if let Some(p) = payload.take() {
            p(r)
        }
    });
}

/// Calls `f` when the counting allocator is first used from now on.
pub(crate) fn set_alloc_installed(f: fn()) {
    ALLOC_INSTALLED.store(f as usize, Ordering::Release);
}

/// The counting allocator was used for the first time.
pub(crate) fn alloc_installed() {
    let f = ALLOC_INSTALLED.load(Ordering::Acquire);
    if f != 0 {
        // SAFETY: only `set_alloc_installed` stores a non-zero value
        // here, and it stores a `fn()`.
        let f = unsafe { std::mem::transmute::<usize, fn()>(f) };
        f();
    }
}

/// Where a new thread block comes from while a live session runs: a
/// file of that session, or `None` (then private memory).
pub(crate) type BlockSource = fn(Layout, u32, u64, Option<&str>) -> Option<Block>;

static BLOCK_SOURCE: AtomicUsize = AtomicUsize::new(0);

/// Installs the live publication's [`BlockSource`] (it answers `None`
/// while no live session runs).
pub(crate) fn set_block_source(f: BlockSource) {
    BLOCK_SOURCE.store(f as usize, Ordering::Release);
}

/// A block of the running live session for thread `index` (`tid`,
/// `name`) with `layout`, from the installed [`BlockSource`].
pub(crate) fn live_block(
    layout: Layout,
    index: u32,
    tid: u64,
    name: Option<&str>,
) -> Option<Block> {
    let f = BLOCK_SOURCE.load(Ordering::Acquire);
    if f == 0 {
        return None;
    }
    // SAFETY: only `set_block_source` stores a non-zero value here, and
    // it stores a `BlockSource`.
    let f = unsafe { std::mem::transmute::<usize, BlockSource>(f) };
    f(layout, index, tid, name)
}

/// Run on each thread at its first measured call of a session.
static FIRST_CALL_HOOK: Mutex<Option<fn()>> = Mutex::new(None);

/// The locked first-call hook (held across `fork`, see `fork.rs`).
pub(crate) fn lock_first_call_hook() -> std::sync::MutexGuard<'static, Option<fn()>> {
    FIRST_CALL_HOOK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sets (or with `None` clears) a function that runs on each thread at
/// its first measured call (or future) of a session, before that call's
/// clock starts, as profiler work (nothing it allocates is counted). The
/// CPU sampler arms the thread there: a thread that starts after the
/// session and ends before the sampler's next scan for new threads is
/// then still sampled from its first measured call.
///
/// The hook must not call measured functions.
pub fn set_first_call_hook(hook: Option<fn()>) {
    *FIRST_CALL_HOOK.lock().unwrap_or_else(|e| e.into_inner()) = hook;
}

/// Runs the first-call hook, if any. Called when a thread creates its
/// first node of a session, inside an [`Internal`](crate::Internal)
/// section.
#[cold]
pub(crate) fn run_first_call_hook() {
    let hook = *FIRST_CALL_HOOK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(hook) = hook {
        hook();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static SEEN: Mutex<Vec<(u8, Vec<u8>)>> = Mutex::new(Vec::new());

    fn keep(kind: u8, payload: &mut dyn FnMut(&mut Vec<u8>)) {
        let mut r = Vec::new();
        payload(&mut r);
        SEEN.lock().unwrap().push((kind, r));
    }

    #[test]
    fn records_reach_the_installed_sink_once_each() {
        // The unit tests run no live session, so no other sink is set.
        let before = RECORD_SINK.load(Ordering::Acquire);
        set_record_sink(keep);
        emit(7, |r| r.extend_from_slice(b"ab"));
        emit(8, |r| r.push(1));
        let seen: Vec<_> = SEEN.lock().unwrap().drain(..).collect();
        RECORD_SINK.store(before, Ordering::Release);
        assert_eq!(seen, [(7, b"ab".to_vec()), (8, vec![1])]);
    }
}
