//! Seed for the dwarf_elf fuzz target: a tiny `no_std` shared object with
//! Rust debug info (Rust names, generics, inlined frames).
#![no_std]

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}

pub struct Acc<T> {
    total: T,
}

impl<T: Copy + core::ops::Add<Output = T>> Acc<T> {
    #[inline(always)]
    fn add(&mut self, x: T) {
        self.total = self.total + x;
    }
}

#[inline(never)]
fn fold<T: Copy + core::ops::Add<Output = T>>(xs: &[T], zero: T) -> T {
    let mut acc = Acc { total: zero };
    for &x in xs {
        acc.add(x);
    }
    acc.total
}

#[unsafe(no_mangle)]
pub extern "C" fn seed_sum(p: *const u32, n: usize) -> u64 {
    // SAFETY: the caller passes `n` readable `u32`s at `p`.
    let xs = unsafe { core::slice::from_raw_parts(p, n) };
    u64::from(fold(xs, 0u32)) + fold(&[1u64, 2, 3], 0)
}
