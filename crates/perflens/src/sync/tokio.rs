//! `tokio::sync::{Mutex, RwLock}`, measured (feature `flow-tokio`).
//!
//! Kept: `new`, `const_new` (const), `lock` (async), `try_lock`,
//! `blocking_lock`, `lock_owned` (for a `T: 'static` only: the measured
//! owned guard keeps tokio's borrowed guard beside the `Arc`), `get_mut`, `into_inner`; for the
//! `RwLock` `read`/`write` (async), `try_read`/`try_write`,
//! `blocking_read`/`blocking_write`; guards with `Deref`(`Mut`),
//! `Debug`, `Display`, `Send`/`Sync` as tokio's. A guard may be dropped
//! on another thread than the one that acquired it: the acquisition is
//! recorded on the thread that drops it. Not kept: the guards' `map`,
//! `downgrade` and `mutex()`, `try_lock_owned`, the `RwLock`'s owned
//! guards and `with_max_readers` (they hand out tokio's own guard types,
//! whose end the measured guard cannot see); use the original type where
//! those are needed.

pub use ::tokio::sync::TryLockError;

#[cfg(not(feature = "enabled"))]
pub use ::tokio::sync::{
    Mutex, MutexGuard, OwnedMutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

#[cfg(feature = "enabled")]
pub use measured::{Mutex, MutexGuard, OwnedMutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(feature = "enabled")]
mod measured {
    use super::TryLockError;
    use ::std::fmt;
    use ::std::mem::ManuallyDrop;
    use ::std::ops::{Deref, DerefMut};
    use ::std::panic::Location;
    use ::std::sync::Arc;
    use ::tokio::sync as ts;
    use perflens_core::{Held, LockSite, lock_clock};

    /// A measured [`tokio::sync::Mutex`].
    pub struct Mutex<T: ?Sized> {
        site: LockSite,
        inner: ts::Mutex<T>,
    }

    /// The guard of a measured tokio [`Mutex`].
    #[must_use = "if unused the Mutex will immediately unlock"]
    #[clippy::has_significant_drop]
    pub struct MutexGuard<'a, T: ?Sized> {
        inner: ManuallyDrop<ts::MutexGuard<'a, T>>,
        site: &'a LockSite,
        held: Held,
    }

    /// The owned guard of a measured tokio [`Mutex`]
    /// ([`Mutex::lock_owned`]).
    #[must_use = "if unused the Mutex will immediately unlock"]
    #[clippy::has_significant_drop]
    pub struct OwnedMutexGuard<T: ?Sized + 'static> {
        // Borrows from `lock`'s heap allocation, which `lock` keeps alive
        // until after this guard is dropped (see `Drop`).
        inner: ManuallyDrop<ts::MutexGuard<'static, T>>,
        lock: Arc<Mutex<T>>,
        held: Held,
    }

    impl<T> Mutex<T> {
        /// A new unlocked mutex, named after the place of this call.
        #[track_caller]
        pub fn new(t: T) -> Mutex<T> {
            Mutex {
                site: LockSite::new("", Location::caller()),
                inner: ts::Mutex::new(t),
            }
        }

        /// [`Mutex::new`], const (for a `static`).
        #[track_caller]
        pub const fn const_new(t: T) -> Mutex<T> {
            Mutex {
                site: LockSite::new("", Location::caller()),
                inner: ts::Mutex::const_new(t),
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
        fn guard<'a>(&'a self, g: ts::MutexGuard<'a, T>, held: Held) -> MutexGuard<'a, T> {
            MutexGuard {
                inner: ManuallyDrop::new(g),
                site: &self.site,
                held,
            }
        }

        /// Waits until the lock is acquired (fair: first come, first
        /// served, as tokio's).
        pub async fn lock(&self) -> MutexGuard<'_, T> {
            let (g, held) = self.acquire().await;
            self.guard(g, held)
        }

        async fn acquire(&self) -> (ts::MutexGuard<'_, T>, Held) {
            if let Ok(g) = self.inner.try_lock() {
                return (g, Held::now());
            }
            let waiting = self.site.contended();
            let g = self.inner.lock().await;
            (g, waiting.acquired())
        }

        /// Blocks the thread until the lock is acquired (not in async
        /// code: as tokio's, it panics there).
        #[track_caller]
        pub fn blocking_lock(&self) -> MutexGuard<'_, T> {
            if let Ok(g) = self.inner.try_lock() {
                return self.guard(g, Held::now());
            }
            let waiting = self.site.contended();
            let g = self.inner.blocking_lock();
            self.guard(g, waiting.acquired())
        }

        /// The lock if it is free now.
        pub fn try_lock(&self) -> Result<MutexGuard<'_, T>, TryLockError> {
            Ok(self.guard(self.inner.try_lock()?, Held::now()))
        }

        /// Waits until the lock is acquired; the guard keeps the mutex
        /// alive.
        pub async fn lock_owned(self: Arc<Self>) -> OwnedMutexGuard<T>
        where
            T: 'static,
        {
            let (g, held) = self.acquire().await;
            // SAFETY: the guard borrows the mutex inside the `Arc`, whose
            // allocation does not move and outlives the guard: the owned
            // guard holds the `Arc` and drops the guard first.
            let g: ts::MutexGuard<'static, T> = unsafe { ::std::mem::transmute(g) };
            OwnedMutexGuard {
                inner: ManuallyDrop::new(g),
                lock: self,
                held,
            }
        }

        /// The value, borrowed mutably (not counted).
        pub fn get_mut(&mut self) -> &mut T {
            self.inner.get_mut()
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

    impl<T: ?Sized> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.inner
        }
    }

    impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            &mut self.inner
        }
    }

    impl<T: ?Sized> Drop for MutexGuard<'_, T> {
        fn drop(&mut self) {
            let release = lock_clock();
            // SAFETY: dropped once, here; never used after.
            unsafe { ManuallyDrop::drop(&mut self.inner) };
            self.site.released(self.held, release, false);
        }
    }

    impl<T: ?Sized + 'static> OwnedMutexGuard<T> {
        /// The mutex this guard holds.
        pub fn mutex(this: &Self) -> &Arc<Mutex<T>> {
            &this.lock
        }
    }

    impl<T: ?Sized + 'static> Deref for OwnedMutexGuard<T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.inner
        }
    }

    impl<T: ?Sized + 'static> DerefMut for OwnedMutexGuard<T> {
        fn deref_mut(&mut self) -> &mut T {
            &mut self.inner
        }
    }

    impl<T: ?Sized + 'static> Drop for OwnedMutexGuard<T> {
        fn drop(&mut self) {
            let release = lock_clock();
            // SAFETY: dropped once, here, before `lock` (a field dropped
            // after this runs) frees what it borrows.
            unsafe { ManuallyDrop::drop(&mut self.inner) };
            self.lock.site.released(self.held, release, false);
        }
    }

    /// A measured [`tokio::sync::RwLock`].
    pub struct RwLock<T: ?Sized> {
        site: LockSite,
        inner: ts::RwLock<T>,
    }

    /// A shared guard of a measured tokio [`RwLock`].
    #[must_use = "if unused the RwLock will immediately unlock"]
    #[clippy::has_significant_drop]
    pub struct RwLockReadGuard<'a, T: ?Sized> {
        inner: ManuallyDrop<ts::RwLockReadGuard<'a, T>>,
        site: &'a LockSite,
        held: Held,
    }

    /// The exclusive guard of a measured tokio [`RwLock`].
    #[must_use = "if unused the RwLock will immediately unlock"]
    #[clippy::has_significant_drop]
    pub struct RwLockWriteGuard<'a, T: ?Sized> {
        inner: ManuallyDrop<ts::RwLockWriteGuard<'a, T>>,
        site: &'a LockSite,
        held: Held,
    }

    impl<T> RwLock<T> {
        /// A new unlocked lock, named after the place of this call.
        #[track_caller]
        pub fn new(t: T) -> RwLock<T> {
            RwLock {
                site: LockSite::new("", Location::caller()),
                inner: ts::RwLock::new(t),
            }
        }

        /// [`RwLock::new`], const (for a `static`).
        #[track_caller]
        pub const fn const_new(t: T) -> RwLock<T> {
            RwLock {
                site: LockSite::new("", Location::caller()),
                inner: ts::RwLock::const_new(t),
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
            g: ts::RwLockReadGuard<'a, T>,
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
            g: ts::RwLockWriteGuard<'a, T>,
            held: Held,
        ) -> RwLockWriteGuard<'a, T> {
            RwLockWriteGuard {
                inner: ManuallyDrop::new(g),
                site: &self.site,
                held,
            }
        }

        /// Waits for shared access.
        pub async fn read(&self) -> RwLockReadGuard<'_, T> {
            if let Ok(g) = self.inner.try_read() {
                return self.read_guard(g, Held::now());
            }
            let waiting = self.site.contended();
            let g = self.inner.read().await;
            self.read_guard(g, waiting.acquired())
        }

        /// Blocks the thread for shared access (not in async code).
        #[track_caller]
        pub fn blocking_read(&self) -> RwLockReadGuard<'_, T> {
            if let Ok(g) = self.inner.try_read() {
                return self.read_guard(g, Held::now());
            }
            let waiting = self.site.contended();
            let g = self.inner.blocking_read();
            self.read_guard(g, waiting.acquired())
        }

        /// Shared access if it is available now.
        pub fn try_read(&self) -> Result<RwLockReadGuard<'_, T>, TryLockError> {
            Ok(self.read_guard(self.inner.try_read()?, Held::now()))
        }

        /// Waits for exclusive access.
        pub async fn write(&self) -> RwLockWriteGuard<'_, T> {
            if let Ok(g) = self.inner.try_write() {
                return self.write_guard(g, Held::now());
            }
            let waiting = self.site.contended();
            let g = self.inner.write().await;
            self.write_guard(g, waiting.acquired())
        }

        /// Blocks the thread for exclusive access (not in async code).
        #[track_caller]
        pub fn blocking_write(&self) -> RwLockWriteGuard<'_, T> {
            if let Ok(g) = self.inner.try_write() {
                return self.write_guard(g, Held::now());
            }
            let waiting = self.site.contended();
            let g = self.inner.blocking_write();
            self.write_guard(g, waiting.acquired())
        }

        /// Exclusive access if it is available now.
        pub fn try_write(&self) -> Result<RwLockWriteGuard<'_, T>, TryLockError> {
            Ok(self.write_guard(self.inner.try_write()?, Held::now()))
        }

        /// The value, borrowed mutably (not counted).
        pub fn get_mut(&mut self) -> &mut T {
            self.inner.get_mut()
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
        fn deref(&self) -> &T {
            &self.inner
        }
    }

    impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
        fn drop(&mut self) {
            let release = lock_clock();
            // SAFETY: dropped once, here; never used after.
            unsafe { ManuallyDrop::drop(&mut self.inner) };
            self.site.released(self.held, release, true);
        }
    }

    impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            &self.inner
        }
    }

    impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            &mut self.inner
        }
    }

    impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
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

    impl<T: ?Sized + fmt::Debug + 'static> fmt::Debug for OwnedMutexGuard<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(&**self.inner, f)
        }
    }

    impl<T: ?Sized + fmt::Display + 'static> fmt::Display for OwnedMutexGuard<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Display::fmt(&**self.inner, f)
        }
    }
}
