//! `std::sync::{Mutex, RwLock}`, measured (feature `flow-std`).

#[cfg(not(feature = "enabled"))]
pub use ::std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(feature = "enabled")]
pub use measured::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(feature = "enabled")]
mod measured {
    use crate::sync::kernel::{fmt_guard, lock_common, release};
    use ::std::cell::UnsafeCell;
    use ::std::fmt;
    use ::std::marker::PhantomData;
    use ::std::mem::{ManuallyDrop, MaybeUninit};
    use ::std::ops::{Deref, DerefMut};
    use ::std::panic::Location;
    use ::std::panic::{RefUnwindSafe, UnwindSafe};
    use ::std::sync::{self as ss, LockResult, PoisonError, TryLockError, TryLockResult};
    use perflens_core::{Held, LockSite};

    /// Maps a std lock result to ours, with the guard made by `f`.
    fn map_lock<G, H>(r: LockResult<G>, f: impl FnOnce(G) -> H) -> LockResult<H> {
        match r {
            Ok(g) => Ok(f(g)),
            Err(p) => Err(PoisonError::new(f(p.into_inner()))),
        }
    }

    /// Maps a std try-lock result to ours, with the guard made by `f`.
    #[inline(always)]
    fn map_try<G, H>(r: TryLockResult<G>, f: impl FnOnce(G) -> H) -> TryLockResult<H> {
        match r {
            Ok(g) => Ok(f(g)),
            Err(TryLockError::Poisoned(p)) => {
                Err(TryLockError::Poisoned(PoisonError::new(f(p.into_inner()))))
            }
            Err(TryLockError::WouldBlock) => Err(TryLockError::WouldBlock),
        }
    }

    /// `t`, as an error when the lock is `poisoned`.
    fn poisoned<T>(poisoned: bool, t: T) -> LockResult<T> {
        if poisoned {
            Err(PoisonError::new(t))
        } else {
            Ok(t)
        }
    }

    /// The holder's std guard and acquisition, kept in the lock so that
    /// the measured guard is one pointer (see [`Mutex`]).
    struct Holder<G> {
        /// The holder's std guard (set while held).
        std_guard: UnsafeCell<MaybeUninit<G>>,
        /// The holder's acquisition (set while held).
        held: UnsafeCell<Held>,
    }

    impl<G> Holder<G> {
        const fn new() -> Holder<G> {
            Holder {
                std_guard: UnsafeCell::new(MaybeUninit::uninit()),
                held: UnsafeCell::new(Held::UNTIMED),
            }
        }

        /// Keeps the guard `g` of a new acquisition, and `held`.
        ///
        /// # Safety
        /// This thread holds the lock exclusively (by `g`), and calls
        /// [`Holder::release`] before the lock can go.
        #[inline(always)]
        unsafe fn keep(&self, g: G, held: Held) {
            // SAFETY: the caller holds the lock, so it alone touches the
            // holder's fields.
            unsafe {
                (*self.std_guard.get()).write(g);
                *self.held.get() = held;
            }
        }

        /// Ends the hold: drops the kept guard (std poisons the lock if
        /// this thread is panicking), freeing the lock.
        ///
        /// # Safety
        /// This thread holds the lock by the guard [`Holder::keep`] kept;
        /// called once per `keep`.
        #[inline(always)]
        unsafe fn release(&self, site: &LockSite) {
            release(site, false, || {
                // SAFETY: the caller holds the lock: the holder's fields
                // are its own, and the guard was written by `keep`; it is
                // dropped once, here, in place.
                unsafe {
                    let held = *self.held.get();
                    (*self.std_guard.get()).assume_init_drop();
                    held
                }
            });
        }
    }

    /// An exclusive guard `$guard` of `$lock`, one pointer: std's guard
    /// (`$std`) and the acquisition are kept in the lock's holder, by
    /// `$lock::$make`, until the measured guard's drop releases them.
    macro_rules! kept_guard {
        ($(#[$m:meta])* $guard:ident of $lock:ident = $($std:ident)::+, made by $make:ident) => {
            $(#[$m])*
            #[clippy::has_significant_drop]
            pub struct $guard<'a, T: ?Sized + 'a> {
                lock: &'a $lock<T>,
                _not_send: PhantomData<$($std)::+<'a, ()>>,
            }

            // SAFETY: the guard hands out `&T` to whoever shares it, as
            // std's.
            unsafe impl<T: ?Sized + Sync> Sync for $guard<'_, T> {}

            impl<T: ?Sized> $lock<T> {
                /// The guard of a new acquisition: keeps std's guard and
                /// `held` in the lock.
                #[inline(always)]
                fn $make<'a>(&'a self, g: $($std)::+<'a, ()>, held: Held) -> $guard<'a, T> {
                    // SAFETY: this thread holds the lock exclusively
                    // (`g`); the guard stays in the holder until the
                    // measured guard's drop releases it, before the lock
                    // can go (the measured guard borrows it for 'a), so
                    // its lifetime may be forgotten meanwhile.
                    unsafe {
                        let g = ::std::mem::transmute::<
                            $($std)::+<'a, ()>,
                            $($std)::+<'static, ()>,
                        >(g);
                        self.holder.keep(g, held);
                    }
                    $guard {
                        lock: self,
                        _not_send: PhantomData,
                    }
                }
            }

            impl<T: ?Sized> Deref for $guard<'_, T> {
                type Target = T;
                #[inline(always)]
                fn deref(&self) -> &T {
                    // SAFETY: this guard's thread holds the lock
                    // exclusively.
                    unsafe { &*self.lock.data.get() }
                }
            }

            impl<T: ?Sized> DerefMut for $guard<'_, T> {
                #[inline(always)]
                fn deref_mut(&mut self) -> &mut T {
                    // SAFETY: as above, and the guard is borrowed mutably.
                    unsafe { &mut *self.lock.data.get() }
                }
            }

            impl<T: ?Sized> Drop for $guard<'_, T> {
                #[inline(always)]
                fn drop(&mut self) {
                    let l = self.lock;
                    // SAFETY: this guard's thread holds the lock, by the
                    // guard `$make` kept; the guard is dropped once.
                    unsafe { l.holder.release(&l.site) };
                }
            }
        };
    }

    /// An exclusive acquisition `$lock` (a first try, `$try`, else the
    /// cold `$contended`, which waits) and the try alone, each `$guard`
    /// kept by `$make`; a poisoned lock's error holds the guard, as std's.
    macro_rules! exclusive {
        ($(#[$m:meta])* $lock:ident, $contended:ident, $(#[$t:meta])* $try:ident -> $guard:ident by $make:ident) => {
            $(#[$m])*
            #[inline]
            pub fn $lock(&self) -> LockResult<$guard<'_, T>> {
                match self.lock.$try() {
                    Ok(g) => Ok(self.$make(g, Held::now())),
                    Err(TryLockError::Poisoned(p)) => {
                        Err(PoisonError::new(self.$make(p.into_inner(), Held::now())))
                    }
                    Err(TryLockError::WouldBlock) => self.$contended(),
                }
            }

            #[cold]
            #[inline(never)]
            fn $contended(&self) -> LockResult<$guard<'_, T>> {
                let waiting = self.site.contended();
                let r = self.lock.$lock();
                let held = waiting.acquired();
                map_lock(r, |g| self.$make(g, held))
            }

            $(#[$t])*
            #[inline]
            pub fn $try(&self) -> TryLockResult<$guard<'_, T>> {
                map_try(self.lock.$try(), |g| self.$make(g, Held::now()))
            }
        };
    }

    /// A measured [`std::sync::Mutex`]: the same methods, errors and
    /// poisoning; each acquisition is counted and timed (see
    /// [`crate::sync`]).
    ///
    /// Built of a `std::sync::Mutex<()>` (which locks, and poisons) and
    /// the value beside it. The holder keeps std's guard and its
    /// acquisition in the mutex itself, so that the measured guard is one
    /// pointer, as small as std's is: a larger guard is copied through
    /// memory on its way out of `lock()`, and that copy of std's guard
    /// (a byte just stored, read in a wider load) stalled each
    /// acquisition by several ns.
    pub struct Mutex<T: ?Sized> {
        site: LockSite,
        lock: ss::Mutex<()>,
        holder: Holder<ss::MutexGuard<'static, ()>>,
        data: UnsafeCell<T>,
    }

    // SAFETY: as std's: the value moves with the mutex, and is reached
    // only by the holder of `lock` (or through `&mut`). The holder's
    // fields are written and read only by the holder.
    unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
    // SAFETY: as above.
    unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}
    impl<T: ?Sized> UnwindSafe for Mutex<T> {}
    impl<T: ?Sized> RefUnwindSafe for Mutex<T> {}

    kept_guard! {
        /// The guard of a measured [`Mutex`]: the lock's hold ends when it
        /// is dropped. Neither `Send` nor (unless `T` is) `Sync`, as std's.
        #[must_use = "if unused the Mutex will immediately unlock"]
        MutexGuard of Mutex = ss::MutexGuard, made by guard
    }

    impl<T> Mutex<T> {
        /// A new unlocked mutex, named after the place of this call (or
        /// `perflens::lock!`).
        #[track_caller]
        pub const fn new(t: T) -> Mutex<T> {
            Mutex {
                site: LockSite::new("", Location::caller()),
                lock: ss::Mutex::new(()),
                holder: Holder::new(),
                data: UnsafeCell::new(t),
            }
        }
    }

    impl<T: ?Sized> Mutex<T> {
        exclusive! {
            /// Blocks until the lock is acquired (as std's; poisoned: the
            /// error holds the guard).
            lock, lock_contended,
            /// Acquires the lock if it is free now (`WouldBlock` if not).
            try_lock -> MutexGuard by guard
        }
    }

    /// A measured [`std::sync::RwLock`]: the same methods, errors and
    /// poisoning; each read or write acquisition is counted and timed.
    ///
    /// Built as [`Mutex`] is: a `std::sync::RwLock<()>` and the value
    /// beside it; a writer keeps std's guard and its acquisition in the
    /// lock, so that the write guard is one pointer.
    pub struct RwLock<T: ?Sized> {
        site: LockSite,
        lock: ss::RwLock<()>,
        /// The writer's std guard and acquisition.
        holder: Holder<ss::RwLockWriteGuard<'static, ()>>,
        data: UnsafeCell<T>,
    }

    // SAFETY: as std's: the value moves with the lock; readers share `&T`
    // (so `T: Sync`), a writer has it alone (so `T: Send`). The writer's
    // fields are written and read only by the writer.
    unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
    // SAFETY: as above.
    unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}
    impl<T: ?Sized> UnwindSafe for RwLock<T> {}
    impl<T: ?Sized> RefUnwindSafe for RwLock<T> {}

    /// A shared guard of a measured [`RwLock`].
    #[must_use = "if unused the RwLock will immediately unlock"]
    #[clippy::has_significant_drop]
    pub struct RwLockReadGuard<'a, T: ?Sized + 'a> {
        inner: ManuallyDrop<ss::RwLockReadGuard<'a, ()>>,
        lock: &'a RwLock<T>,
        held: Held,
    }

    // SAFETY: the guard hands out `&T` to whoever shares it, as std's.
    unsafe impl<T: ?Sized + Sync> Sync for RwLockReadGuard<'_, T> {}

    kept_guard! {
        /// The exclusive guard of a measured [`RwLock`].
        #[must_use = "if unused the RwLock will immediately unlock"]
        RwLockWriteGuard of RwLock = ss::RwLockWriteGuard, made by write_guard
    }

    impl<T> RwLock<T> {
        /// A new unlocked lock, named after the place of this call (or
        /// `perflens::lock!`).
        #[track_caller]
        pub const fn new(t: T) -> RwLock<T> {
            RwLock {
                site: LockSite::new("", Location::caller()),
                lock: ss::RwLock::new(()),
                holder: Holder::new(),
                data: UnsafeCell::new(t),
            }
        }
    }

    impl<T: ?Sized> RwLock<T> {
        #[inline(always)]
        fn read_guard<'a>(
            &'a self,
            g: ss::RwLockReadGuard<'a, ()>,
            held: Held,
        ) -> RwLockReadGuard<'a, T> {
            RwLockReadGuard {
                inner: ManuallyDrop::new(g),
                lock: self,
                held,
            }
        }

        /// Blocks until shared access is acquired.
        #[inline]
        pub fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
            // The slow path returns the parts, not the guard, so that the
            // fast path's guard stays in registers: a guard built in the
            // slow path's return slot would be copied out of memory
            // (wider loads than the stores that wrote it, which stalls).
            let (r, held) = match self.lock.try_read() {
                Ok(g) => (Ok(g), Held::now()),
                Err(TryLockError::Poisoned(p)) => (Err(p), Held::now()),
                Err(TryLockError::WouldBlock) => self.read_contended(),
            };
            map_lock(r, |g| self.read_guard(g, held))
        }

        #[cold]
        #[inline(never)]
        fn read_contended(&self) -> (LockResult<ss::RwLockReadGuard<'_, ()>>, Held) {
            let waiting = self.site.contended();
            let r = self.lock.read();
            (r, waiting.acquired())
        }

        /// Shared access if it is available now.
        #[inline]
        pub fn try_read(&self) -> TryLockResult<RwLockReadGuard<'_, T>> {
            map_try(self.lock.try_read(), |g| self.read_guard(g, Held::now()))
        }

        exclusive! {
            /// Blocks until exclusive access is acquired.
            write, write_contended,
            /// Exclusive access if it is available now.
            try_write -> RwLockWriteGuard by write_guard
        }
    }

    impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
        type Target = T;
        #[inline(always)]
        fn deref(&self) -> &T {
            // SAFETY: this guard holds shared access.
            unsafe { &*self.lock.data.get() }
        }
    }

    impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
        #[inline(always)]
        fn drop(&mut self) {
            release(&self.lock.site, true, || {
                // SAFETY: dropped once, here; never used after.
                unsafe { ManuallyDrop::drop(&mut self.inner) };
                self.held
            });
        }
    }

    /// What both locks have alike over std's lock `lock` (its try for
    /// shared access `$try`): poisoning, `get_mut`, and `Debug` as std's,
    /// `Name { data: .., poisoned: .., .. }` (not counted).
    macro_rules! std_common {
        ($($lock:ident $try:ident),*) => {$(
            impl<T: ?Sized> $lock<T> {
                /// Whether a thread panicked while holding the lock.
                pub fn is_poisoned(&self) -> bool {
                    self.lock.is_poisoned()
                }

                /// Clears the poison.
                pub fn clear_poison(&self) {
                    self.lock.clear_poison()
                }

                /// The value, borrowed mutably: no locking needed (not
                /// counted).
                pub fn get_mut(&mut self) -> LockResult<&mut T> {
                    poisoned(self.lock.is_poisoned(), self.data.get_mut())
                }
            }

            impl<T> $lock<T> {
                /// The value, the lock consumed (poisoned: the error holds
                /// it).
                pub fn into_inner(self) -> LockResult<T> {
                    poisoned(self.lock.is_poisoned(), self.data.into_inner())
                }
            }

            impl<T: ?Sized + fmt::Debug> fmt::Debug for $lock<T> {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    let mut d = f.debug_struct(stringify!($lock));
                    match self.lock.$try() {
                        // SAFETY: the lock is held (by `_g`, shared at
                        // least) while the value is read.
                        Ok(_g) => d.field("data", &unsafe { &*self.data.get() }),
                        // SAFETY: as above.
                        Err(TryLockError::Poisoned(_g)) => {
                            d.field("data", &unsafe { &*self.data.get() })
                        }
                        Err(TryLockError::WouldBlock) => d.field("data", &format_args!("<locked>")),
                    };
                    d.field("poisoned", &self.lock.is_poisoned());
                    d.finish_non_exhaustive()
                }
            }
        )*};
    }
    std_common!(Mutex try_lock, RwLock try_read);
    lock_common!(Mutex, RwLock);
    fmt_guard!(MutexGuard, RwLockReadGuard, RwLockWriteGuard);
}
