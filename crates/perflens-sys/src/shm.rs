//! The live session's files: where this user's sessions are, the private
//! directory that holds them, and the checks that refuse a directory or
//! file that is not this user's or that others may open. The session's
//! writer (perflens-core's `publish.rs`) and its readers (perflens-live)
//! use the same checks.
//!
//! The entry points, the same on every platform:
//! - `root() -> Option<PathBuf>`: where live sessions of this user are
//!   (`$XDG_RUNTIME_DIR/perflens`, or when that variable is unset or
//!   empty `/dev/shm/perflens-<uid>` on Linux, `$TMPDIR/perflens-<uid>`
//!   on macOS, which has no `/dev/shm`); `None` where there is no live
//!   view ([`crate::Capabilities::live_view`]);
//! - `make_private_dir(&Path)`: creates a root if needed and checks it;
//! - `check_private_dir(&Path)`: refuses a directory unless it is a real
//!   directory (not a symlink) of this user, closed to group and others;
//! - [`SessionDir`]: one session's directory, created new and held open:
//!   its files are created exclusively (`O_EXCL|O_NOFOLLOW`, mode 0600)
//!   and removed through it, never through a path someone else could
//!   have replaced, and it tells the free space of its file system;
//! - `read_at(&File, buf, offset)`: a positioned read;
//! - `write_all_at(&File, bytes, offset)`: a positioned write;
//! - `open_checked(&Path) -> (File, len)`: opens a session's file for
//!   reading (`O_NOFOLLOW`, non-blocking), refusing one that is not a
//!   regular file of this user closed to group and others;
//! - [`ReadView`]: such a file mapped read-only and shared, guarded
//!   against SIGBUS: the writer never shrinks its files, but anyone who
//!   can write them can (the same user), and touching a mapped page past
//!   the end of the file raises SIGBUS. For an address inside a view, the
//!   guard maps a page of zeros over the faulting page and returns: the
//!   read is retried and gets zeros, and the view is marked as faulted
//!   ([`ReadView::faulted`]). A SIGBUS at any other address gets the
//!   disposition the process had before. The portable build has no
//!   shared mappings: every entry point that would make a file says so.

pub use crate::imp::shm::{
    ReadView, SessionDir, check_private_dir, make_private_dir, open_checked, read_at, root,
    write_all_at,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::PAGE;
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("perflens-sys-shm-{name}-{}", std::process::id()))
    }

    #[test]
    fn a_session_directory_makes_private_files_and_maps_them() {
        let root = scratch("root");
        let _ = std::fs::remove_dir_all(&root);
        let made = make_private_dir(&root);
        if !crate::CAPABILITIES.live_view {
            // No live view: no root, and nothing is made.
            assert_eq!(super::root(), None);
            assert!(made.unwrap_err().contains("not available on this platform"));
            assert!(SessionDir::create(&root.join("s")).is_err());
            return;
        }
        made.unwrap();
        assert!(super::root().is_some());
        // Made twice: the second finds it and checks it.
        make_private_dir(&root).unwrap();
        let dir = root.join("s");
        let sd = SessionDir::create(&dir).unwrap();
        assert!(
            SessionDir::create(&dir).is_err(),
            "a session directory is new"
        );
        let f = sd.create_exclusive("f").unwrap();
        assert!(sd.create_exclusive("f").is_err(), "files are created new");
        f.set_len(2 * PAGE as u64).unwrap();
        write_all_at(&f, b"hello", PAGE as u64 + 3).unwrap();
        assert!(sd.free_space().unwrap() > 0);
        let (file, len) = open_checked(&dir.join("f")).unwrap();
        assert_eq!(len, 2 * PAGE as u64);
        {
            let view = ReadView::map(&file, len as usize).unwrap();
            assert_eq!(view.len(), 2 * PAGE);
            // SAFETY: the view holds two pages.
            let bytes = unsafe { std::slice::from_raw_parts(view.base(), view.len()) };
            assert_eq!(&bytes[PAGE + 3..PAGE + 8], b"hello");
            assert!(!view.faulted());
            // The file shrinks under the view: the guard reads zeros, and says so.
            f.set_len(PAGE as u64).unwrap();
            // SAFETY: inside the view; the guard turns the fault into zeros.
            let b = unsafe { std::ptr::read_volatile(view.base().add(PAGE + 3)) };
            assert_eq!(b, 0);
            assert!(view.faulted());
        }
        sd.remove("f").unwrap();
        assert!(
            open_checked(&dir.join("f"))
                .unwrap_err()
                .contains("cannot open")
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn files_and_directories_open_to_others_are_refused() {
        if !crate::CAPABILITIES.live_view {
            assert!(open_checked(&scratch("none")).is_err());
            assert!(check_private_dir(&std::env::temp_dir()).is_err());
            return;
        }
        use std::os::unix::fs::PermissionsExt;
        let root = scratch("open");
        let _ = std::fs::remove_dir_all(&root);
        make_private_dir(&root).unwrap();
        let f = root.join("f");
        std::fs::write(&f, b"x").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(open_checked(&f).unwrap_err().contains("refused"));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(open_checked(&f).is_ok());
        std::os::unix::fs::symlink(&f, root.join("l")).unwrap();
        assert!(
            open_checked(&root.join("l")).is_err(),
            "no symlink followed"
        );
        assert!(
            open_checked(&root)
                .unwrap_err()
                .contains("not a regular file")
        );
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check_private_dir(&root).unwrap_err().contains("refused"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
