//! Counting a scope exactly (`alloc::count`): while a closure runs, the
//! allocator hook of its thread counts into the scope's own counters
//! instead of the thread's block, with or without a session, in any
//! number of threads at once; with `count_by_function`, the measured
//! calls inside are broken down too, through the guard's slow path
//! (which a call on a thread no session records takes anyway). Above the
//! counting allocator (whose hook it points), below the guard (which
//! reports its calls here).

#[cfg(feature = "alloc")]
use crate::alloc::installed;
#[cfg(feature = "alloc")]
use crate::block::ThreadAlloc;
#[cfg(feature = "alloc")]
use crate::hot::{self, Internal};

/// What the current thread allocated and freed inside [`count`]: exact,
/// every allocation and free the counting allocator saw on this thread,
/// the profiler's own left out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocCount {
    /// Bytes allocated (a `realloc` counts as a free and an allocation).
    pub allocated_bytes: u64,
    /// Allocations made.
    pub allocations: u64,
    /// Bytes freed (including memory allocated before the scope or on
    /// another thread).
    pub freed_bytes: u64,
    /// Frees made.
    pub frees: u64,
}

impl AllocCount {
    /// Bytes allocated minus bytes freed: what the scope left allocated
    /// (negative when it freed more than it allocated).
    pub fn net_bytes(&self) -> i64 {
        self.allocated_bytes.wrapping_sub(self.freed_bytes) as i64
    }
}

/// Runs `f` and counts exactly what the current thread allocates and
/// frees meanwhile, whether or not a session records, and in any number
/// of threads at once (each counts its own): a test can assert that code
/// allocates nothing, or at most so much. What `f` returns is returned
/// with the count, so dropping it is not counted.
///
/// Scopes nest (an outer scope's count includes the inner one's). While a
/// scope runs on a thread that a session records, its allocations are
/// counted by the scope and handed to the session when it ends, on the
/// function that called `count`. Allocations on other threads (spawned by
/// `f` or not) are not counted.
///
/// Costs what counting costs the allocator hook while a session records
/// (the hook's fast path): the hook counts into the scope's counters
/// instead of the thread's block.
///
/// # Panics
/// If the counting allocator is not the program's global allocator
/// (nothing could be counted: every count would read 0).
#[cfg(feature = "alloc")]
pub fn count<R>(f: impl FnOnce() -> R) -> (R, AllocCount) {
    assert_installed();
    let counters = ThreadAlloc::open();
    let scope = Scope::enter(&counters, std::ptr::null_mut());
    let r = f();
    drop(scope);
    (r, AllocCount::of(&counters))
}

/// [`count`], with the measured functions called inside broken down: for
/// each (`#[perflens::measure]`, sync), its calls and what they
/// allocated and freed, inclusive of what they called, a recursion
/// counted once (its outermost calls). The breakdown needs the thread
/// not to be recorded by a session (a recorded thread's calls go to the
/// session, and the breakdown is empty); calls nested deeper than
/// [`SCOPE_CALL_DEPTH`] count in their caller. By bytes allocated, then
/// allocations, descending.
#[cfg(feature = "alloc")]
pub fn count_by_function<R>(f: impl FnOnce() -> R) -> (R, AllocCount, Vec<FunctionAllocs>) {
    assert_installed();
    let counters = ThreadAlloc::open();
    let mut calls = ScopeCalls {
        counters: &counters,
        stack: [(None, [0; 4]); SCOPE_CALL_DEPTH as usize],
        depth: 0,
        by_callsite: Vec::new(),
    };
    let scope = Scope::enter(&counters, &mut calls);
    let r = f();
    drop(scope);
    let _internal = Internal::enter();
    let mut functions: Vec<FunctionAllocs> = (calls.by_callsite.iter())
        .map(
            |&(cs, n, [allocated_bytes, allocations, freed_bytes, frees])| FunctionAllocs {
                name: cs.name(),
                calls: n,
                count: AllocCount {
                    allocated_bytes,
                    allocations,
                    freed_bytes,
                    frees,
                },
            },
        )
        .collect();
    // Two callsites may share a name (a label): one row each name.
    functions.sort_by(|a, b| a.name.cmp(&b.name));
    functions.dedup_by(|b, a| {
        if a.name != b.name {
            return false;
        }
        a.calls += b.calls;
        a.count.allocated_bytes += b.count.allocated_bytes;
        a.count.allocations += b.count.allocations;
        a.count.freed_bytes += b.count.freed_bytes;
        a.count.frees += b.count.frees;
        true
    });
    functions.sort_by(|a, b| {
        (b.count.allocated_bytes, b.count.allocations)
            .cmp(&(a.count.allocated_bytes, a.count.allocations))
            .then(a.name.cmp(&b.name))
    });
    (r, AllocCount::of(&counters), functions)
}

/// One measured function's share of a [`count_by_function`] scope.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionAllocs {
    /// The function's row name (as in reports).
    pub name: String,
    /// Its calls inside the scope.
    pub calls: u64,
    /// What they allocated and freed, inclusive.
    pub count: AllocCount,
}

/// Measured calls nested this deep inside a [`count_by_function`] scope
/// are broken down; deeper ones count in their caller.
#[cfg(feature = "alloc")]
pub const SCOPE_CALL_DEPTH: u32 = 64;

#[cfg(feature = "alloc")]
fn assert_installed() {
    assert!(
        installed(),
        "perflens::alloc::count needs perflens's counting allocator as the global allocator: \
         #[global_allocator] static ALLOC: perflens::CountingAlloc = \
         perflens::CountingAlloc::new(std::alloc::System);"
    );
}

#[cfg(feature = "alloc")]
impl AllocCount {
    fn of(counters: &ThreadAlloc) -> AllocCount {
        let [allocated_bytes, allocations, freed_bytes, frees] = counters.totals();
        AllocCount {
            allocated_bytes,
            allocations,
            freed_bytes,
            frees,
        }
    }
}

/// The measured calls of a [`count_by_function`] scope: those open (with
/// the scope's totals when each began), and each callsite's sums.
#[cfg(feature = "alloc")]
struct ScopeCalls {
    counters: *const ThreadAlloc,
    stack: [(Option<&'static crate::callsite::Callsite>, [u64; 4]); SCOPE_CALL_DEPTH as usize],
    depth: u32,
    by_callsite: Vec<(&'static crate::callsite::Callsite, u64, [u64; 4])>,
}

#[cfg(feature = "alloc")]
thread_local! {
    /// The innermost running [`count_by_function`] scope's calls (null:
    /// none, or an inner plain `count` scope runs). No destructor.
    static SCOPE_CALLS: std::cell::Cell<*mut ScopeCalls> =
        const { std::cell::Cell::new(std::ptr::null_mut()) };
}

/// A measured call begins on a thread no session records: if a
/// [`count_by_function`] scope runs, it notes the call and returns its
/// index (the guard's), else `None` (not broken down).
#[cfg(feature = "alloc")]
pub(crate) fn scope_call_enter(callsite: &'static crate::callsite::Callsite) -> Option<u32> {
    let p = SCOPE_CALLS.with(std::cell::Cell::get);
    if p.is_null() {
        return None;
    }
    // SAFETY: the scope's `ScopeCalls` lives on `count_by_function`'s
    // stack until its `Scope` is dropped, which clears this pointer; only
    // this thread uses it, and no other reference to it is alive here.
    let sc = unsafe { &mut *p };
    if sc.depth >= SCOPE_CALL_DEPTH {
        return None;
    }
    let i = sc.depth;
    // SAFETY: the scope's counters outlive it (see above).
    sc.stack[i as usize] = (Some(callsite), unsafe { &*sc.counters }.totals());
    sc.depth = i + 1;
    Some(i)
}

/// The scope's call `i` ends (calls above it whose guards were leaked
/// end with it): its allocations are added to its callsite's, unless an
/// enclosing call of the same callsite will count them.
#[cfg(feature = "alloc")]
pub(crate) fn scope_call_exit(i: u32) {
    let p = SCOPE_CALLS.with(std::cell::Cell::get);
    if p.is_null() {
        return;
    }
    // SAFETY: as in `scope_call_enter`.
    let sc = unsafe { &mut *p };
    if i >= sc.depth {
        return; // a guard of an earlier scope, or already ended
    }
    sc.depth = i;
    let (Some(cs), start) = sc.stack[i as usize] else {
        return;
    };
    // SAFETY: as in `scope_call_enter`.
    let now = unsafe { &*sc.counters }.totals();
    let outermost =
        !(sc.stack[..i as usize].iter()).any(|(c, _)| c.is_some_and(|c| std::ptr::eq(c, cs)));
    let delta: [u64; 4] = std::array::from_fn(|k| now[k].wrapping_sub(start[k]));
    let _internal = Internal::enter();
    match sc
        .by_callsite
        .iter_mut()
        .find(|(c, _, _)| std::ptr::eq(*c, cs))
    {
        Some(e) => {
            e.1 += 1;
            if outermost {
                for (sum, d) in e.2.iter_mut().zip(delta) {
                    *sum = sum.wrapping_add(d);
                }
            }
        }
        None => sc
            .by_callsite
            .push((cs, 1, if outermost { delta } else { [0; 4] })),
    }
}

/// An `alloc::count` scope on the current thread: the hook counts into
/// its counters from [`Scope::enter`] until it is dropped, also when `f`
/// unwinds (the hook must never keep a pointer to counters that are
/// gone).
#[cfg(feature = "alloc")]
struct Scope {
    counters: *const ThreadAlloc,
    outer: *const ThreadAlloc,
    outer_calls: *mut ScopeCalls,
}

#[cfg(feature = "alloc")]
impl Scope {
    /// Counts into `counters`, and breaks measured calls down into
    /// `calls` (null: not broken down) until dropped.
    fn enter(counters: &ThreadAlloc, calls: *mut ScopeCalls) -> Scope {
        let counters: *const ThreadAlloc = counters;
        let outer = hot::set_scope(counters);
        let outer_calls = SCOPE_CALLS.with(|c| c.replace(calls));
        // SAFETY: owner thread; no other reference to the hot state is
        // alive across this call.
        hot::arm_alloc(unsafe { &mut *hot::hot() });
        Scope {
            counters,
            outer,
            outer_calls,
        }
    }
}

#[cfg(feature = "alloc")]
impl Drop for Scope {
    fn drop(&mut self) {
        SCOPE_CALLS.with(|c| c.set(self.outer_calls));
        hot::set_scope(self.outer);
        // SAFETY: owner thread; no other reference to the hot state is
        // alive across this call.
        let hot = unsafe { &mut *hot::hot() };
        hot::arm_alloc(hot);
        // SAFETY: the counters live on `count`'s stack until after this
        // drop; the outer scope's on an enclosing `count`'s.
        let counters = unsafe { &*self.counters };
        if !self.outer.is_null() {
            // SAFETY: as above.
            unsafe { &*self.outer }.add(counters);
        } else if hot.has_block() && std::ptr::eq(hot.alloc, &hot.block().header().alloc) {
            // The session records this thread: what the scope counted is
            // its too, from the next frame boundary on (the function that
            // called `count` gets it).
            hot.block().header().alloc.add(counters);
        }
    }
}
