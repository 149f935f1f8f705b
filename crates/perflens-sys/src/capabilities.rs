//! What the implementation in force can do ([`CAPABILITIES`]): tests of
//! a capability the portable build lacks check it and assert the
//! documented degraded behaviour, and the runtime says what is missing.

/// What this build of perflens can do on this platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// The platform's name in messages ("linux", "macos", "posix" for
    /// the POSIX implementation forced on Linux, "portable").
    pub platform: &'static str,
    /// A session publishes its data in shared files that `perflens top`
    /// reads from another process ([`crate::shm`]). Without it a session
    /// records as usual and says once that the live view is not
    /// available.
    pub live_view: bool,
    /// A report when the program is stopped by SIGTERM or SIGINT
    /// ([`crate::signal::self_pipe`]). Without it the program dies of
    /// the signal without one (the periodic JSON rewrite still runs).
    pub stop_signals: bool,
    /// CPU sampling (signals delivered on CPU time, read in a handler).
    pub cpu_sampling: bool,
    /// A process-wide memory barrier ([`crate::barrier`]); the kernel may
    /// still lack it at run time. Without it the runtime's owners swap.
    pub process_barrier: bool,
    /// Handlers around `fork` ([`crate::fork`]), which keep a child from
    /// hanging on a lock another thread held. Without them there is no
    /// `fork` to handle (or it is not supported).
    pub fork_handling: bool,
    /// Released pages read back as zero ([`crate::mem::release`]).
    /// Without it they keep their bytes, which no caller relies on.
    pub page_release: bool,
}

/// What the implementation in force can do.
pub const CAPABILITIES: Capabilities = crate::imp::CAPABILITIES;
