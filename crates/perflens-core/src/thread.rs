//! Which block belongs to the current thread, the registry of all blocks,
//! and the session generation that says whether recording is on.
//!
//! The thread-local is a `const`-initialised `Cell` of a raw pointer: it
//! has no destructor and no lazy-init check, so reading it is a single
//! `fs:`-relative load. A second thread-local with a destructor (the exit
//! hook) is touched only once per thread, when its block is created, to
//! learn when the thread exits; its block is then kept (and reported)
//! until the next session starts, when it is recycled for a new thread.
//!
//! Generations: recording is on while the global generation is even. Each
//! block remembers the generation its contents belong to; a thread that
//! finds its block from an older generation resets it itself (single
//! writer), so starting a session never touches another thread's memory.

use crate::block::{Block, Header, Layout};
use crate::snapshot::Mode;
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

/// Session generation: odd = no session (recording off).
pub(crate) static EPOCH: AtomicU32 = AtomicU32::new(1);
static MODE: AtomicU32 = AtomicU32::new(crate::block::MODE_TIMED);
static SAMPLE_EVERY: AtomicU32 = AtomicU32::new(1);
static NODE_CAP: AtomicU32 = AtomicU32::new(crate::session::DEFAULT_NODES);
static STACK_CAP: AtomicU32 = AtomicU32::new(crate::session::DEFAULT_STACK_DEPTH);

thread_local! {
    static CURRENT: Cell<*mut Header> = const { Cell::new(std::ptr::null_mut()) };
    static EXIT_HOOK: ExitHook = const { ExitHook };
}

/// The current thread's block pointer (null if none). One TLS load.
#[inline(always)]
pub(crate) fn current() -> *mut Header {
    CURRENT.with(|c| c.get())
}

/// The current thread's block if it belongs to the running session.
#[inline(always)]
pub(crate) fn active_block() -> Option<(Block, u32)> {
    let b = current();
    let epoch = EPOCH.load(Ordering::Relaxed);
    if b.is_null() {
        return None;
    }
    let block = Block(b);
    if block.header().epoch.load(Ordering::Relaxed) == epoch {
        Some((block, epoch))
    } else {
        None
    }
}

struct ExitHook;

impl Drop for ExitHook {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| {
            let b = c.get();
            if !b.is_null() {
                Block(b).header().exited.store(1, Ordering::Release);
                c.set(std::ptr::null_mut());
            }
        });
    }
}

pub(crate) struct Entry {
    pub block: Block,
    pub name: Option<String>,
}

struct Registry {
    live: Vec<Entry>,
    free: Vec<Block>,
    next_index: u32,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    live: Vec::new(),
    free: Vec::new(),
    next_index: 0,
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` over every registered block.
pub(crate) fn for_each_block(mut f: impl FnMut(&Entry)) {
    for e in &registry().live {
        f(e);
    }
}

/// Makes the current thread's block ready for the running session,
/// creating or resetting it. `None` when no session runs, the thread is
/// exiting, or memory could not be had.
#[cold]
#[inline(never)]
pub(crate) fn prepare() -> Option<(Block, u32)> {
    let epoch = EPOCH.load(Ordering::Acquire);
    if epoch & 1 == 1 {
        return None;
    }
    let mut b = current();
    if b.is_null() {
        b = create_for_current_thread()?;
    }
    let block = Block(b);
    if block.header().epoch.load(Ordering::Relaxed) != epoch {
        block.reset(epoch, MODE.load(Ordering::Relaxed), SAMPLE_EVERY.load(Ordering::Relaxed));
    }
    Some((block, epoch))
}

fn create_for_current_thread() -> Option<*mut Header> {
    // Learn about thread exit; fails once the thread is being torn down,
    // in which case nothing is recorded for it from now on.
    EXIT_HOOK.try_with(|_| ()).ok()?;
    let layout = Layout::new(NODE_CAP.load(Ordering::Relaxed), STACK_CAP.load(Ordering::Relaxed));
    let name = std::thread::current().name().map(str::to_owned);
    let tid = os_tid();
    let block = {
        let mut reg = registry();
        let index = reg.next_index;
        reg.next_index += 1;
        let recycled = reg
            .free
            .iter()
            .position(|b| {
                let h = b.header();
                h.node_cap == layout.node_cap && h.stack_cap == layout.stack_cap
            })
            .map(|i| reg.free.swap_remove(i));
        let block = match recycled {
            Some(b) => {
                // SAFETY: a recycled block's thread has exited and nulled
                // its pointer; nobody else writes it.
                unsafe {
                    let h = b.0;
                    (*h).thread_index = index;
                    (*h).tid = tid;
                }
                b.header().exited.store(0, Ordering::Relaxed);
                b.header().epoch.store(0, Ordering::Relaxed);
                b
            }
            None => Block::create(layout, index, tid)?,
        };
        reg.live.push(Entry { block, name });
        block
    };
    CURRENT.with(|c| c.set(block.0));
    Some(block.0)
}

/// Starts generation `epoch` with the given settings.
pub(crate) fn activate(epoch: u32, mode: Mode, node_cap: u32, stack_cap: u32) {
    let (m, every) = match mode {
        Mode::Timed => (crate::block::MODE_TIMED, 1),
        Mode::Count => (crate::block::MODE_COUNT, 1),
        Mode::Sampled { every } => (crate::block::MODE_SAMPLED, every.max(1)),
    };
    MODE.store(m, Ordering::Relaxed);
    SAMPLE_EVERY.store(every, Ordering::Relaxed);
    NODE_CAP.store(node_cap, Ordering::Relaxed);
    STACK_CAP.store(stack_cap, Ordering::Relaxed);
    {
        // Blocks of threads that exited during an earlier session can be
        // handed to new threads now.
        let mut reg = registry();
        let mut i = 0;
        while i < reg.live.len() {
            if reg.live[i].block.header().exited.load(Ordering::Acquire) == 1 {
                let e = reg.live.swap_remove(i);
                reg.free.push(e.block);
            } else {
                i += 1;
            }
        }
        reg.live.sort_by_key(|e| e.block.header().thread_index);
    }
    EPOCH.store(epoch, Ordering::Release);
}

/// Stops recording.
pub(crate) fn deactivate(epoch: u32) {
    let _ = EPOCH.compare_exchange(epoch, epoch | 1, Ordering::AcqRel, Ordering::Relaxed);
}

/// The current session generation (odd if none).
pub(crate) fn generation() -> u32 {
    EPOCH.load(Ordering::Acquire)
}

#[cfg(target_os = "linux")]
fn os_tid() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

#[cfg(not(target_os = "linux"))]
fn os_tid() -> u64 {
    0
}
