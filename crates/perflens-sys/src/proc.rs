//! What the process can read about itself in `/proc`, for the CPU
//! sampler: its executable, its memory mappings, its threads and their
//! names, a thread's voluntary context switches, and fields of its
//! status.
//!
//! Entry points (the same in `linux.rs` and `portable.rs`): [`exe`],
//! [`maps`], [`threads`], [`thread_name`], [`voluntary_switches`],
//! [`status_field`], [`clear_peak_rss`]. The portable implementation has
//! no `/proc`: the executable is what `std::env::current_exe` finds, and
//! everything else is `None` or empty.

pub use crate::imp::proc::*;

/// One mapping of the process's address space, as `/proc/self/maps`
/// lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapsEntry {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Mapped readable.
    pub readable: bool,
    /// The main thread's stack (`[stack]`).
    pub main_stack: bool,
}

/// Parses one line of `/proc/self/maps` (`None` if it is not one).
pub fn parse_maps_line(line: &str) -> Option<MapsEntry> {
    let mut it = line.split_whitespace();
    let (range, perms) = (it.next()?, it.next()?);
    let (a, b) = range.split_once('-')?;
    Some(MapsEntry {
        start: u64::from_str_radix(a, 16).ok()?,
        end: u64::from_str_radix(b, 16).ok()?,
        readable: perms.starts_with('r'),
        main_stack: line.trim_end().ends_with("[stack]"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_maps_line_is_parsed() {
        let line =
            "7ffd5b3a1000-7ffd5b3c2000 rw-p 00000000 00:00 0                          [stack]";
        assert_eq!(
            parse_maps_line(line),
            Some(MapsEntry {
                start: 0x7ffd_5b3a_1000,
                end: 0x7ffd_5b3c_2000,
                readable: true,
                main_stack: true,
            })
        );
        let line = "55d0c8a00000-55d0c8a01000 ---p 00000000 08:01 123 /usr/bin/x";
        let m = parse_maps_line(line).unwrap();
        assert!(!m.readable && !m.main_stack);
        assert_eq!(parse_maps_line("garbage"), None);
        assert_eq!(parse_maps_line("zz-10 r--p"), None);
    }

    #[cfg(all(target_os = "linux", not(perflens_portable), not(perflens_posix)))]
    #[test]
    fn the_process_reads_itself() {
        let exe = exe().unwrap();
        assert_eq!(exe, std::env::current_exe().unwrap());
        let here = 5u64;
        let addr = &here as *const u64 as u64;
        let maps = maps();
        assert!(
            maps.iter()
                .any(|m| m.readable && m.start <= addr && addr < m.end)
        );
        assert!(maps.iter().filter(|m| m.main_stack).count() == 1);
        let tids = threads();
        let me = crate::thread::tid() as i32;
        assert!(tids.contains(&me) && tids.is_sorted());
        let (other, name) = std::thread::Builder::new()
            .name("sys-proc-name-test".into())
            .spawn(|| {
                let tid = crate::thread::tid() as i32;
                (tid, thread_name(tid))
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(name.as_deref(), Some("sys-proc-name-t"), "{other}");
        assert_eq!(thread_name(-5), None);
        let before = voluntary_switches(me).unwrap();
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        assert!(voluntary_switches(me).unwrap() >= before + 20);
        assert_eq!(voluntary_switches(-5), None);
        assert!(status_field("VmRSS").unwrap().ends_with("kB"));
        assert_eq!(status_field("NoSuchField"), None);
    }

    #[cfg(any(not(target_os = "linux"), perflens_portable, perflens_posix))]
    #[test]
    fn there_is_no_proc() {
        assert_eq!(exe(), std::env::current_exe().ok());
        assert!(maps().is_empty() && threads().is_empty());
        assert_eq!((thread_name(1), voluntary_switches(1)), (None, None));
        assert_eq!(status_field("VmRSS"), None);
        assert!(!clear_peak_rss());
    }
}
