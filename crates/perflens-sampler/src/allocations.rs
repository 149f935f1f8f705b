//! Native stacks of allocations: the sampler's allocation-free unwinder,
//! run on the calling thread from inside a global allocator (perflens's
//! heap profiler calls it for each sampled allocation), and their names.
//!
//! The walker is made once, the first time it is asked for
//! ([`allocation_walker`]): the loaded modules (pinned, as a session's
//! are) and a framehop unwinder over their unwind tables, plus a few
//! unwind caches. None of it is ever freed, so a walk never meets freed
//! memory. A walk:
//!
//! - reads its own pc, sp and frame pointer (inline assembly);
//! - reads stack memory only inside the calling thread's own stack,
//!   `[sp, top)`, its top learned once per thread (`pthread_getattr_np`,
//!   which may call the C library's `malloc`, never the Rust global
//!   allocator the walk runs inside) and kept in a thread-local without
//!   a destructor;
//! - borrows one of the caches with a compare-and-swap, and gives up
//!   (no stack) if all are in use, rather than wait;
//! - allocates nothing, takes no lock.
//!
//! Code in modules loaded after the walker was made has no unwind tables
//! here: a walk stops at its first frame there (the addresses found so
//! far are kept).

use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use crate::SamplerError;
use crate::arch::{self, UnwindCache, Unwinder};
use crate::modules::{self, MemBytes, ModuleSet};
use crate::symbolize::{Symbol, Symbolizer};

/// Unwind caches: walks that may run at once (more give up).
const CACHES: usize = 8;

struct Walker {
    /// Held for their memory (the unwinder reads it) and for names.
    modules: ModuleSet,
    unwinder: Unwinder<MemBytes>,
    caches: [(AtomicBool, AtomicPtr<UnwindCache>); CACHES],
}

/// The walker (null until first asked for; never freed).
static WALKER: AtomicPtr<Walker> = AtomicPtr::new(std::ptr::null_mut());
/// Serializes making it.
static MAKING: Mutex<()> = Mutex::new(());

thread_local! {
    /// This thread's stack, `[lo, hi)`: (0, 0) until learned, (1, 1) if
    /// the system would not tell.
    static BOUNDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// The function that writes the calling thread's native stack (return
/// addresses, innermost first, starting inside the walker itself) into
/// a slice and returns how many it wrote: what
/// `perflens_core::set_stack_walker` takes. Makes the walker the first
/// time (reads the loaded modules' unwind tables: call it outside the
/// allocator, when a session starts).
pub fn allocation_walker() -> Result<fn(&mut [u64]) -> usize, SamplerError> {
    if !arch::SUPPORTED || cfg!(any(perflens_portable, perflens_posix)) {
        return Err(SamplerError::Unsupported(
            "native stacks need Linux on x86_64 or aarch64, and perflens-sys's Linux build",
        ));
    }
    if WALKER.load(Ordering::Acquire).is_null() {
        let _making = MAKING.lock().unwrap_or_else(|e| e.into_inner());
        if WALKER.load(Ordering::Acquire).is_null() {
            WALKER.store(Box::into_raw(Box::new(Walker::new())), Ordering::Release);
        }
    }
    Ok(walk_here)
}

impl Walker {
    fn new() -> Walker {
        let modules = modules::load_modules();
        let mut unwinder: Unwinder<MemBytes> = Unwinder::new();
        for m in &modules.modules {
            if let Some(fm) = m.framehop_module() {
                framehop::Unwinder::add_module(&mut unwinder, fm);
            }
        }
        Walker {
            modules,
            unwinder,
            caches: std::array::from_fn(|_| {
                let cache = Box::into_raw(arch::new_cache());
                (AtomicBool::new(false), AtomicPtr::new(cache))
            }),
        }
    }

    /// Borrows a cache (the one at `start` first): `None` if all are in
    /// use.
    fn borrow(&self, start: usize) -> Option<usize> {
        (0..CACHES).map(|i| (start + i) % CACHES).find(|&i| {
            (self.caches[i].0)
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        })
    }
}

/// The calling thread's stack bounds, learned on its first walk.
fn bounds() -> (u64, u64) {
    let b = BOUNDS.with(Cell::get);
    if b != (0, 0) {
        return b;
    }
    let b = perflens_sys::thread::stack_bounds().unwrap_or((1, 1));
    BOUNDS.with(|c| c.set(b));
    b
}

/// Walks the calling thread's stack into `out` (see
/// [`allocation_walker`]). Allocates nothing through the Rust allocator
/// and takes no lock.
#[inline(never)]
fn walk_here(out: &mut [u64]) -> usize {
    let w = WALKER.load(Ordering::Acquire);
    if w.is_null() || out.is_empty() {
        return 0;
    }
    // SAFETY: a published walker is never freed.
    let w = unsafe { &*w };
    let regs = arch::here_regs();
    let (lo, hi) = bounds();
    if regs.sp < lo || regs.sp >= hi {
        return 0; // another stack (a coroutine's): not read
    }
    let Some(i) = w.borrow((arch::thread_pointer() >> 6) as usize) else {
        return 0;
    };
    let mut read_stack = |addr: u64| -> Result<u64, ()> {
        if addr >= regs.sp && addr.is_multiple_of(8) && addr.checked_add(8).is_some_and(|e| e <= hi)
        {
            // SAFETY: `[sp, hi)` is the calling thread's own stack from
            // its current stack pointer to its top: mapped while this
            // thread runs this function.
            Ok(unsafe { std::ptr::read_volatile(addr as *const u64) })
        } else {
            Err(())
        }
    };
    // SAFETY: cache `i` is ours until its flag is cleared below (taken
    // with compare-and-swap); the cache was made with the walker and is
    // never freed.
    let cache = unsafe { &mut *w.caches[i].1.load(Ordering::Relaxed) };
    let n = arch::unwind(&w.unwinder, cache, &regs, &mut read_stack, out);
    w.caches[i].0.store(false, Ordering::Release);
    n
}

/// The frames of the stacks `stacks` (as [`allocation_walker`]'s
/// function wrote them: the first address a pc, the rest return
/// addresses), each innermost first, inlined functions expanded, with
/// their source files where the debug info has them, from the modules
/// the walker knows (and those loaded since). Not for the allocator: it
/// allocates and reads debug info.
pub fn symbolize_allocation_stacks(stacks: &[Vec<u64>]) -> Vec<Vec<Symbol>> {
    let w = WALKER.load(Ordering::Acquire);
    if w.is_null() {
        return (stacks.iter())
            .map(|s| {
                (s.iter())
                    .map(|a| Symbol::unknown(format!("{a:#x}")))
                    .collect()
            })
            .collect();
    }
    // SAFETY: a published walker is never freed.
    let w = unsafe { &*w };
    let later = (modules::current_adds() != w.modules.adds).then(modules::load_modules);
    let mods = later.as_ref().unwrap_or(&w.modules);
    let mut sym = Symbolizer::new(&mods.modules);
    let mut addrs: Vec<(u64, bool)> = stacks
        .iter()
        .flat_map(|s| s.iter().enumerate().map(|(i, &a)| (a, i > 0)))
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    let names = sym.symbolize_all(&addrs, true);
    stacks
        .iter()
        .map(|s| {
            s.iter()
                .enumerate()
                .flat_map(|(i, &a)| names.get(&(a, i > 0)).into_iter().flatten())
                .cloned()
                .collect()
        })
        .collect()
}

// The portable and POSIX builds have no walker (`allocation_walker`
// says so): nothing to walk there.
#[cfg(all(test, not(any(perflens_portable, perflens_posix))))]
mod tests {
    use super::*;

    #[inline(never)]
    fn outer_frame_for_the_walk() -> Vec<u64> {
        let walk = allocation_walker().expect("a walker on this platform");
        let mut out = [0u64; 64];
        let n = walk(&mut out);
        std::hint::black_box(out[..n].to_vec())
    }

    #[test]
    fn a_walk_names_its_callers() {
        let stack = outer_frame_for_the_walk();
        assert!(stack.len() >= 3, "{stack:x?}");
        let names: Vec<String> = (symbolize_allocation_stacks(&[stack]).remove(0))
            .into_iter()
            .map(|s| s.name)
            .collect();
        let at = |f: &str| names.iter().position(|n| n.ends_with(f));
        let (walk, outer, test) = (
            at("allocations::walk_here"),
            at("outer_frame_for_the_walk"),
            at("a_walk_names_its_callers"),
        );
        assert!(
            walk.is_some() && walk < outer && outer < test,
            "innermost first: {names:#?}"
        );
    }
}
