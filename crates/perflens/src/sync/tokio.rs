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
    use crate::sync::kernel::{guard, inner_common, lock_common, release};
    use ::std::fmt;
    use ::std::mem::ManuallyDrop;
    use ::std::ops::{Deref, DerefMut};
    use ::std::sync::Arc;
    use ::tokio::sync as ts;
    use perflens_core::{Held, LockSite};

    /// A measured [`tokio::sync::Mutex`].
    pub struct Mutex<T: ?Sized> {
        site: LockSite,
        inner: ts::Mutex<T>,
    }

    guard! {
        /// The guard of a measured tokio [`Mutex`].
        #[must_use = "if unused the Mutex will immediately unlock"]
        MutexGuard = ts::MutexGuard, shared = false, DerefMut
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

    /// A measured [`tokio::sync::RwLock`].
    pub struct RwLock<T: ?Sized> {
        site: LockSite,
        inner: ts::RwLock<T>,
    }

    guard! {
        /// A shared guard of a measured tokio [`RwLock`].
        #[must_use = "if unused the RwLock will immediately unlock"]
        RwLockReadGuard = ts::RwLockReadGuard, shared = true
    }

    guard! {
        /// The exclusive guard of a measured tokio [`RwLock`].
        #[must_use = "if unused the RwLock will immediately unlock"]
        RwLockWriteGuard = ts::RwLockWriteGuard, shared = false, DerefMut
    }

    lock_common!(Mutex, RwLock);
    inner_common!(
        Mutex = ts::Mutex<T> { new, const_new: const },
        RwLock = ts::RwLock<T> { new, const_new: const },
    );

    /// The guard of a try that succeeded now, or else of a wait
    /// (`$wait`, awaited or blocking), as a contended acquisition.
    macro_rules! acquire {
        ($self:ident, $guard:ident, $try:ident, $($wait:tt)+) => {{
            if let Ok(g) = $self.inner.$try() {
                return $guard::new(g, &$self.site, Held::now());
            }
            let waiting = $self.site.contended();
            let g = $self.inner.$($wait)+;
            $guard::new(g, &$self.site, waiting.acquired())
        }};
    }

    impl<T: ?Sized> Mutex<T> {
        /// Waits until the lock is acquired (fair: first come, first
        /// served, as tokio's).
        pub async fn lock(&self) -> MutexGuard<'_, T> {
            let (g, held) = self.acquire().await;
            MutexGuard::new(g, &self.site, held)
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
            acquire!(self, MutexGuard, try_lock, blocking_lock())
        }

        /// The lock if it is free now.
        pub fn try_lock(&self) -> Result<MutexGuard<'_, T>, TryLockError> {
            let g = self.inner.try_lock()?;
            Ok(MutexGuard::new(g, &self.site, Held::now()))
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
            release(&self.lock.site, false, || {
                // SAFETY: dropped once, here, before `lock` (a field
                // dropped after this runs) frees what it borrows.
                unsafe { ManuallyDrop::drop(&mut self.inner) };
                self.held
            });
        }
    }

    impl<T: ?Sized + fmt::Debug + 'static> fmt::Debug for OwnedMutexGuard<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(&**self, f)
        }
    }

    impl<T: ?Sized + fmt::Display + 'static> fmt::Display for OwnedMutexGuard<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Display::fmt(&**self, f)
        }
    }

    impl<T: ?Sized> RwLock<T> {
        /// Waits for shared access.
        pub async fn read(&self) -> RwLockReadGuard<'_, T> {
            acquire!(self, RwLockReadGuard, try_read, read().await)
        }

        /// Blocks the thread for shared access (not in async code).
        #[track_caller]
        pub fn blocking_read(&self) -> RwLockReadGuard<'_, T> {
            acquire!(self, RwLockReadGuard, try_read, blocking_read())
        }

        /// Shared access if it is available now.
        pub fn try_read(&self) -> Result<RwLockReadGuard<'_, T>, TryLockError> {
            let g = self.inner.try_read()?;
            Ok(RwLockReadGuard::new(g, &self.site, Held::now()))
        }

        /// Waits for exclusive access.
        pub async fn write(&self) -> RwLockWriteGuard<'_, T> {
            acquire!(self, RwLockWriteGuard, try_write, write().await)
        }

        /// Blocks the thread for exclusive access (not in async code).
        #[track_caller]
        pub fn blocking_write(&self) -> RwLockWriteGuard<'_, T> {
            acquire!(self, RwLockWriteGuard, try_write, blocking_write())
        }

        /// Exclusive access if it is available now.
        pub fn try_write(&self) -> Result<RwLockWriteGuard<'_, T>, TryLockError> {
            let g = self.inner.try_write()?;
            Ok(RwLockWriteGuard::new(g, &self.site, Held::now()))
        }
    }
}
