//! Linux's process-wide barrier: `membarrier(2)`.

use crate::barrier::Kind;

const QUERY: libc::c_int = 0;
const GLOBAL: libc::c_int = 1;
const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// `membarrier(cmd, 0, 0)`.
fn call(cmd: libc::c_int) -> libc::c_long {
    // SAFETY: membarrier takes no pointers; unknown commands fail with
    // EINVAL, and a kernel without it with ENOSYS.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_uint,
            0 as libc::c_int,
        )
    }
}

/// The best barrier the kernel offers, registering this process for the
/// private expedited one when it can.
pub fn find() -> Kind {
    let cmds = call(QUERY);
    if cmds > 0
        && cmds & PRIVATE_EXPEDITED as libc::c_long != 0
        && call(REGISTER_PRIVATE_EXPEDITED) == 0
    {
        Kind::PrivateExpedited
    } else if cmds > 0 && cmds & GLOBAL as libc::c_long != 0 {
        Kind::Global
    } else {
        Kind::None
    }
}

/// Runs barrier `kind`; `false` if it failed (or is [`Kind::None`]).
pub fn run(kind: Kind) -> bool {
    let cmd = match kind {
        Kind::PrivateExpedited => PRIVATE_EXPEDITED,
        Kind::Global => GLOBAL,
        Kind::None => return false,
    };
    call(cmd) == 0
}
