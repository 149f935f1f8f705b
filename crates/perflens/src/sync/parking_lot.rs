//! `parking_lot::{Mutex, RwLock}`, measured (feature `flow-parking-lot`).
//!
//! Kept: `new` (const), `lock`, `try_lock`, `try_lock_for`,
//! `try_lock_until`, `is_locked`, `get_mut`, `into_inner`, `data_ptr`,
//! `force_unlock`; for the `RwLock` its `read`/`write` forms and
//! `is_locked_exclusive`; guards with `Deref`(`Mut`), `Debug`, `Display`
//! and `unlock_fair`. Not kept: upgradable reads, recursive reads,
//! `downgrade`, the guards' `map`, `unlocked` and `leak`, `raw` and
//! `lock_arc` (they hand out `lock_api` types that the measured guard
//! cannot follow: the hold would end unseen, or twice); use the
//! original type where those are needed.

#[cfg(not(feature = "enabled"))]
pub use ::parking_lot::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(feature = "enabled")]
pub use measured::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(feature = "enabled")]
mod measured {
    use crate::sync::kernel::{contended, guard, inner_common, lock_common, release, try_or_wait};
    use ::parking_lot as pl;
    use ::std::mem::ManuallyDrop;
    use ::std::time::{Duration, Instant};
    use perflens_core::{Held, LockSite};

    /// A measured [`parking_lot::Mutex`].
    pub struct Mutex<T: ?Sized> {
        site: LockSite,
        inner: pl::Mutex<T>,
    }

    guard! {
        /// The guard of a measured parking_lot [`Mutex`].
        #[must_use = "if unused the Mutex will immediately unlock"]
        MutexGuard = pl::MutexGuard, shared = false, DerefMut
    }

    /// A measured [`parking_lot::RwLock`].
    pub struct RwLock<T: ?Sized> {
        site: LockSite,
        inner: pl::RwLock<T>,
    }

    guard! {
        /// A shared guard of a measured parking_lot [`RwLock`].
        #[must_use = "if unused the RwLock will immediately unlock"]
        RwLockReadGuard = pl::RwLockReadGuard, shared = true
    }

    guard! {
        /// The exclusive guard of a measured parking_lot [`RwLock`].
        #[must_use = "if unused the RwLock will immediately unlock"]
        RwLockWriteGuard = pl::RwLockWriteGuard, shared = false, DerefMut
    }

    /// The blocking acquisition `$lock` (a first try, else the cold
    /// `$contended`, which waits) and the try alone, `$try`, each
    /// returning a `$guard`.
    macro_rules! acquire {
        ($(#[$m:meta])* $lock:ident, $contended:ident, $(#[$t:meta])* $try:ident -> $guard:ident) => {
            $(#[$m])*
            #[inline]
            pub fn $lock(&self) -> $guard<'_, T> {
                match self.inner.$try() {
                    Some(g) => $guard::new(g, &self.site, Held::now()),
                    None => self.$contended(),
                }
            }

            #[cold]
            #[inline(never)]
            fn $contended(&self) -> $guard<'_, T> {
                let (g, held) = contended(&self.site, || self.inner.$lock());
                $guard::new(g, &self.site, held)
            }

            $(#[$t])*
            #[inline]
            pub fn $try(&self) -> Option<$guard<'_, T>> {
                Some($guard::new(self.inner.$try()?, &self.site, Held::now()))
            }
        };
    }

    /// Acquisitions that may give up: a first try (`$try`), then the
    /// original's own wait of the same name, as a contended acquisition.
    macro_rules! timed {
        ($($(#[$m:meta])* $name:ident($arg:ident: $ty:ty), $try:ident -> $guard:ident;)*) => {$(
            $(#[$m])*
            pub fn $name(&self, $arg: $ty) -> Option<$guard<'_, T>> {
                let now = self.inner.$try();
                let (g, held) = try_or_wait(&self.site, now, || self.inner.$name($arg))?;
                Some($guard::new(g, &self.site, held))
            }
        )*};
    }

    lock_common!(Mutex, RwLock);
    inner_common!(Mutex = pl::Mutex<T> { new: const }, RwLock = pl::RwLock<T> { new: const });

    impl<T: ?Sized> Mutex<T> {
        acquire! {
            /// Blocks until the lock is acquired.
            lock, lock_contended,
            /// The lock if it is free now.
            try_lock -> MutexGuard
        }

        timed! {
            /// The lock, waiting for it `timeout` at most.
            try_lock_for(timeout: Duration), try_lock -> MutexGuard;
            /// The lock, waiting for it until `deadline` at most.
            try_lock_until(deadline: Instant), try_lock -> MutexGuard;
        }

        /// Whether the mutex is locked now.
        pub fn is_locked(&self) -> bool {
            self.inner.is_locked()
        }

        /// A raw pointer to the value.
        pub fn data_ptr(&self) -> *mut T {
            self.inner.data_ptr()
        }

        /// Unlocks a mutex whose guard was forgotten (not counted).
        ///
        /// # Safety
        /// As `parking_lot::Mutex::force_unlock`: the mutex is locked,
        /// by a guard that was forgotten.
        pub unsafe fn force_unlock(&self) {
            // SAFETY: the caller's contract.
            unsafe { self.inner.force_unlock() }
        }
    }

    impl<'a, T: ?Sized + 'a> MutexGuard<'a, T> {
        /// Unlocks with a fair unlock (the next waiter gets the lock).
        pub fn unlock_fair(s: Self) {
            let mut s = ManuallyDrop::new(s);
            release(s.site, false, || {
                // SAFETY: taken once; `s` is never dropped (ManuallyDrop),
                // so the guard's own drop does not run.
                let g = unsafe { ManuallyDrop::take(&mut s.inner) };
                pl::MutexGuard::unlock_fair(g);
                s.held
            });
        }
    }

    impl<T: ?Sized> RwLock<T> {
        acquire! {
            /// Blocks until shared access is acquired.
            read, read_contended,
            /// Shared access if it is available now.
            try_read -> RwLockReadGuard
        }

        acquire! {
            /// Blocks until exclusive access is acquired.
            write, write_contended,
            /// Exclusive access if it is available now.
            try_write -> RwLockWriteGuard
        }

        timed! {
            /// Shared access, waiting `timeout` at most.
            try_read_for(timeout: Duration), try_read -> RwLockReadGuard;
            /// Exclusive access, waiting `timeout` at most.
            try_write_for(timeout: Duration), try_write -> RwLockWriteGuard;
        }

        /// Whether the lock is held (shared or exclusive) now.
        pub fn is_locked(&self) -> bool {
            self.inner.is_locked()
        }

        /// Whether the lock is held exclusively now.
        pub fn is_locked_exclusive(&self) -> bool {
            self.inner.is_locked_exclusive()
        }

        /// A raw pointer to the value.
        pub fn data_ptr(&self) -> *mut T {
            self.inner.data_ptr()
        }
    }
}
