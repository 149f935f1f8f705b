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

#[cfg(target_os = "linux")]
mod membarrier {
    pub const QUERY: libc::c_int = 0;
    pub const GLOBAL: libc::c_int = 1;
    pub const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    pub const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    /// `membarrier(cmd, 0, 0)`.
    pub fn call(cmd: libc::c_int) -> libc::c_long {
        // SAFETY: membarrier takes no pointers; unknown commands fail
        // with EINVAL, and a kernel without it with ENOSYS.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_uint,
                0 as libc::c_int,
            )
        }
    }
}

/// The best barrier the kernel offers, registering this process for the
/// private expedited one when it can.
pub fn find() -> Kind {
    #[cfg(target_os = "linux")]
    {
        let cmds = membarrier::call(membarrier::QUERY);
        if cmds > 0
            && cmds & membarrier::PRIVATE_EXPEDITED as libc::c_long != 0
            && membarrier::call(membarrier::REGISTER_PRIVATE_EXPEDITED) == 0
        {
            Kind::PrivateExpedited
        } else if cmds > 0 && cmds & membarrier::GLOBAL as libc::c_long != 0 {
            Kind::Global
        } else {
            Kind::None
        }
    }
    #[cfg(not(target_os = "linux"))]
    Kind::None
}

/// Runs barrier `kind` (one [`find`] returned); `false` if it failed (or
/// is [`Kind::None`]).
pub fn run(kind: Kind) -> bool {
    #[cfg(target_os = "linux")]
    {
        let cmd = match kind {
            Kind::PrivateExpedited => membarrier::PRIVATE_EXPEDITED,
            Kind::Global => membarrier::GLOBAL,
            Kind::None => return false,
        };
        membarrier::call(cmd) == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = kind;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_barrier_found_runs() {
        let kind = find();
        // Linux has had membarrier since 4.3 (private expedited since
        // 4.14): the machines perflens runs on have one of the two.
        #[cfg(target_os = "linux")]
        assert_ne!(kind, Kind::None);
        assert_eq!(run(kind), kind != Kind::None);
    }
}
