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
    use ::parking_lot as pl;
    use ::std::fmt;
    use ::std::mem::ManuallyDrop;
    use ::std::ops::{Deref, DerefMut};
    use ::std::panic::Location;
    use ::std::time::{Duration, Instant};
    use perflens_core::{Held, LockSite, lock_clock};

    /// A measured [`parking_lot::Mutex`].
    pub struct Mutex<T: ?Sized> {
        site: LockSite,
        inner: pl::Mutex<T>,
    }

    /// The guard of a measured parking_lot [`Mutex`].
    #[must_use = "if unused the Mutex will immediately unlock"]
    #[clippy::has_significant_drop]
    pub struct MutexGuard<'a, T: ?Sized + 'a> {
        inner: ManuallyDrop<pl::MutexGuard<'a, T>>,
        site: &'a LockSite,
        held: Held,
    }

    impl<T> Mutex<T> {
        /// A new unlocked mutex, named after the place of this call.
        #[track_caller]
        pub const fn new(t: T) -> Mutex<T> {
            Mutex {
                site: LockSite::new("", Location::caller()),
                inner: pl::Mutex::new(t),
            }
        }

        /// The mutex, its row named `label` (`perflens::lock!` calls it).
        pub const fn with_label(mut self, label: &'static str) -> Mutex<T> {
            self.site.set_label(label);
            self
        }

        /// The value, the mutex consumed.
        pub fn into_inner(self) -> T {
            self.inner.into_inner()
        }
    }

    impl<T: ?Sized> Mutex<T> {
        fn guard<'a>(&'a self, g: pl::MutexGuard<'a, T>, held: Held) -> MutexGuard<'a, T> {
            MutexGuard {
                inner: ManuallyDrop::new(g),
                site: &self.site,
                held,
            }
        }

        /// Blocks until the lock is acquired.
        #[inline]
        pub fn lock(&self) -> MutexGuard<'_, T> {
            match self.inner.try_lock() {
                Some(g) => self.guard(g, Held::now()),
                None => self.lock_contended(),
            }
        }

        #[cold]
        #[inline(never)]
        fn lock_contended(&self) -> MutexGuard<'_, T> {
            let waiting = self.site.contended();
            let g = self.inner.lock();
            self.guard(g, waiting.acquired())
        }

        /// The lock if it is free now.
        #[inline]
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            Some(self.guard(self.inner.try_lock()?, Held::now()))
        }

        /// The lock, waiting for it `timeout` at most.
        pub fn try_lock_for(&self, timeout: Duration) -> Option<MutexGuard<'_, T>> {
            self.try_lock_until_opt(Instant::now().checked_add(timeout))
        }

        /// The lock, waiting for it until `deadline` at most.
        pub fn try_lock_until(&self, deadline: Instant) -> Option<MutexGuard<'_, T>> {
            self.try_lock_until_opt(Some(deadline))
        }

        fn try_lock_until_opt(&self, deadline: Option<Instant>) -> Option<MutexGuard<'_, T>> {
            if let Some(g) = self.inner.try_lock() {
                return Some(self.guard(g, Held::now()));
            }
            let waiting = self.site.contended();
            let g = match deadline {
                Some(d) => self.inner.try_lock_until(d)?,
                None => self.inner.lock(),
            };
            Some(self.guard(g, waiting.acquired()))
        }

        /// Whether the mutex is locked now.
        pub fn is_locked(&self) -> bool {
            self.inner.is_locked()
        }

        /// The value, borrowed mutably (not counted).
        pub fn get_mut(&mut self) -> &mut T {
            self.inner.get_mut()
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

    impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(&self.inner, f)
        }
    }

    impl<T: Default> Default for Mutex<T> {
        #[track_caller]
        fn default() -> Mutex<T> {
            Mutex::new(T::default())
        }
    }

    impl<T> From<T> for Mutex<T> {
        #[track_caller]
        fn from(t: T) -> Mutex<T> {
            Mutex::new(t)
        }
    }

    impl<'a, T: ?Sized + 'a> MutexGuard<'a, T> {
        /// Unlocks with a fair unlock (the next waiter gets the lock).
        pub fn unlock_fair(mut s: Self) {
            let release = lock_clock();
            // SAFETY: taken once; `s` is forgotten below, so its drop
            // does not run.
            let g = unsafe { ManuallyDrop::take(&mut s.inner) };
            pl::MutexGuard::unlock_fair(g);
            s.site.released(s.held, release, false);
            ::std::mem::forget(s);
        }
    }

    impl<T: ?Sized> Deref for MutexGuard<'_, T> {
        type Target = T;
        #[inline(always)]
        fn deref(&self) -> &T {
            &self.inner
        }
    }

    impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
        #[inline(always)]
        fn deref_mut(&mut self) -> &mut T {
            &mut self.inner
        }
    }

    impl<T: ?Sized> Drop for MutexGuard<'_, T> {
        #[inline]
        fn drop(&mut self) {
            let release = lock_clock();
            // SAFETY: dropped once, here; never used after.
            unsafe { ManuallyDrop::drop(&mut self.inner) };
            self.site.released(self.held, release, false);
        }
    }

    /// A measured [`parking_lot::RwLock`].
    pub struct RwLock<T: ?Sized> {
        site: LockSite,
        inner: pl::RwLock<T>,
    }

    /// A shared guard of a measured parking_lot [`RwLock`].
    #[must_use = "if unused the RwLock will immediately unlock"]
    #[clippy::has_significant_drop]
    pub struct RwLockReadGuard<'a, T: ?Sized + 'a> {
        inner: ManuallyDrop<pl::RwLockReadGuard<'a, T>>,
        site: &'a LockSite,
        held: Held,
    }

    /// The exclusive guard of a measured parking_lot [`RwLock`].
    #[must_use = "if unused the RwLock will immediately unlock"]
    #[clippy::has_significant_drop]
    pub struct RwLockWriteGuard<'a, T: ?Sized + 'a> {
        inner: ManuallyDrop<pl::RwLockWriteGuard<'a, T>>,
        site: &'a LockSite,
        held: Held,
    }

    impl<T> RwLock<T> {
        /// A new unlocked lock, named after the place of this call.
        #[track_caller]
        pub const fn new(t: T) -> RwLock<T> {
            RwLock {
                site: LockSite::new("", Location::caller()),
                inner: pl::RwLock::new(t),
            }
        }

        /// The lock, its row named `label` (`perflens::lock!` calls it).
        pub const fn with_label(mut self, label: &'static str) -> RwLock<T> {
            self.site.set_label(label);
            self
        }

        /// The value, the lock consumed.
        pub fn into_inner(self) -> T {
            self.inner.into_inner()
        }
    }

    impl<T: ?Sized> RwLock<T> {
        fn read_guard<'a>(
            &'a self,
            g: pl::RwLockReadGuard<'a, T>,
            held: Held,
        ) -> RwLockReadGuard<'a, T> {
            RwLockReadGuard {
                inner: ManuallyDrop::new(g),
                site: &self.site,
                held,
            }
        }

        fn write_guard<'a>(
            &'a self,
            g: pl::RwLockWriteGuard<'a, T>,
            held: Held,
        ) -> RwLockWriteGuard<'a, T> {
            RwLockWriteGuard {
                inner: ManuallyDrop::new(g),
                site: &self.site,
                held,
            }
        }

        /// Blocks until shared access is acquired.
        #[inline]
        pub fn read(&self) -> RwLockReadGuard<'_, T> {
            match self.inner.try_read() {
                Some(g) => self.read_guard(g, Held::now()),
                None => self.read_contended(),
            }
        }

        #[cold]
        #[inline(never)]
        fn read_contended(&self) -> RwLockReadGuard<'_, T> {
            let waiting = self.site.contended();
            let g = self.inner.read();
            self.read_guard(g, waiting.acquired())
        }

        /// Shared access if it is available now.
        #[inline]
        pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
            Some(self.read_guard(self.inner.try_read()?, Held::now()))
        }

        /// Shared access, waiting `timeout` at most.
        pub fn try_read_for(&self, timeout: Duration) -> Option<RwLockReadGuard<'_, T>> {
            if let Some(g) = self.inner.try_read() {
                return Some(self.read_guard(g, Held::now()));
            }
            let waiting = self.site.contended();
            let g = self.inner.try_read_for(timeout)?;
            Some(self.read_guard(g, waiting.acquired()))
        }

        /// Blocks until exclusive access is acquired.
        #[inline]
        pub fn write(&self) -> RwLockWriteGuard<'_, T> {
            match self.inner.try_write() {
                Some(g) => self.write_guard(g, Held::now()),
                None => self.write_contended(),
            }
        }

        #[cold]
        #[inline(never)]
        fn write_contended(&self) -> RwLockWriteGuard<'_, T> {
            let waiting = self.site.contended();
            let g = self.inner.write();
            self.write_guard(g, waiting.acquired())
        }

        /// Exclusive access if it is available now.
        #[inline]
        pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
            Some(self.write_guard(self.inner.try_write()?, Held::now()))
        }

        /// Exclusive access, waiting `timeout` at most.
        pub fn try_write_for(&self, timeout: Duration) -> Option<RwLockWriteGuard<'_, T>> {
            if let Some(g) = self.inner.try_write() {
                return Some(self.write_guard(g, Held::now()));
            }
            let waiting = self.site.contended();
            let g = self.inner.try_write_for(timeout)?;
            Some(self.write_guard(g, waiting.acquired()))
        }

        /// Whether the lock is held (shared or exclusive) now.
        pub fn is_locked(&self) -> bool {
            self.inner.is_locked()
        }

        /// Whether the lock is held exclusively now.
        pub fn is_locked_exclusive(&self) -> bool {
            self.inner.is_locked_exclusive()
        }

        /// The value, borrowed mutably (not counted).
        pub fn get_mut(&mut self) -> &mut T {
            self.inner.get_mut()
        }

        /// A raw pointer to the value.
        pub fn data_ptr(&self) -> *mut T {
            self.inner.data_ptr()
        }
    }

    impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(&self.inner, f)
        }
    }

    impl<T: Default> Default for RwLock<T> {
        #[track_caller]
        fn default() -> RwLock<T> {
            RwLock::new(T::default())
        }
    }

    impl<T> From<T> for RwLock<T> {
        #[track_caller]
        fn from(t: T) -> RwLock<T> {
            RwLock::new(t)
        }
    }

    impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
        type Target = T;
        #[inline(always)]
        fn deref(&self) -> &T {
            &self.inner
        }
    }

    impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
        #[inline]
        fn drop(&mut self) {
            let release = lock_clock();
            // SAFETY: dropped once, here; never used after.
            unsafe { ManuallyDrop::drop(&mut self.inner) };
            self.site.released(self.held, release, true);
        }
    }

    impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
        type Target = T;
        #[inline(always)]
        fn deref(&self) -> &T {
            &self.inner
        }
    }

    impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
        #[inline(always)]
        fn deref_mut(&mut self) -> &mut T {
            &mut self.inner
        }
    }

    impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
        #[inline]
        fn drop(&mut self) {
            let release = lock_clock();
            // SAFETY: dropped once, here; never used after.
            unsafe { ManuallyDrop::drop(&mut self.inner) };
            self.site.released(self.held, release, false);
        }
    }

    macro_rules! fmt_guard {
        ($($g:ident),*) => {$(
            impl<T: ?Sized + fmt::Debug> fmt::Debug for $g<'_, T> {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    fmt::Debug::fmt(&**self.inner, f)
                }
            }

            impl<T: ?Sized + fmt::Display> fmt::Display for $g<'_, T> {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    fmt::Display::fmt(&**self.inner, f)
                }
            }
        )*};
    }
    fmt_guard!(MutexGuard, RwLockReadGuard, RwLockWriteGuard);
}
