//! Architecture-specific parts of the sampler: reading the interrupted
//! registers from a signal's `ucontext_t` and unwinding from them.
//!
//! Every architecture module provides the same entry points:
//!
//! - `Unwinder<D>`: the framehop unwinder type (allocation-free policy),
//! - `UnwindCache`: its per-thread cache, created with `new_cache()`,
//! - `unsafe fn regs_from_ucontext(uc) -> Regs`,
//! - `fn thread_pointer() -> u64` (async-signal-safe),
//! - `fn start_regs(regs) -> framehop's registers`, from which [`unwind`]
//!   (written once, here) walks the stack.
//!
//! `SUPPORTED` is `false` where no such module exists; the crate still
//! builds there and `ProfilerGuard::new` returns `SamplerError::Unsupported`.

/// Registers the unwinder starts from, read from the interrupted context.
#[derive(Clone, Copy, Debug, Default)]
#[allow(dead_code)]
pub(crate) struct Regs {
    /// Instruction pointer of the interrupted instruction (the leaf).
    pub pc: u64,
    /// Stack pointer.
    pub sp: u64,
    /// Frame pointer.
    pub fp: u64,
    /// Link register (aarch64: the return address of a function that has
    /// not saved it yet; 0 where the architecture has none).
    pub lr: u64,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod x86_64;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) use self::x86_64::*;

#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
mod aarch64;
#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
pub(crate) use self::aarch64::*;

/// Unwinds from `regs` into `out` (first entry: the interrupted pc, then
/// return addresses). Returns the number of addresses written. Stops at the
/// first error (unreadable stack, unknown code): what was found is kept.
///
/// Does not allocate: the unwinder uses `MustNotAllocateDuringUnwind` and
/// all unwind data was loaded when the modules were added.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
#[inline]
pub(crate) fn unwind<D, F>(
    unwinder: &Unwinder<D>,
    cache: &mut UnwindCache,
    regs: &Regs,
    read_stack: &mut F,
    out: &mut [u64],
) -> usize
where
    D: core::ops::Deref<Target = [u8]>,
    F: FnMut(u64) -> Result<u64, ()>,
{
    use framehop::Unwinder as _;
    let mut n = 0;
    let mut iter = unwinder.iter_frames(regs.pc, start_regs(regs), cache, read_stack);
    while n < out.len() {
        match iter.next() {
            Ok(Some(frame)) => {
                out[n] = frame.address();
                n += 1;
            }
            Ok(None) | Err(_) => break,
        }
    }
    n
}

/// Whether this target has an architecture module (and so a sampler).
pub(crate) const SUPPORTED: bool = cfg!(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
));
