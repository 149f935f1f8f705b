//! What every measured lock shares: the end of a hold (the original
//! unlocked, then the acquisition recorded), the guards over an
//! original's guard, their `Debug` and `Display`, and the lock's own
//! `Default`, `From` and `with_label`.

// Each lock flavour is behind a feature of its own: an item unused by the
// flavours compiled in is not dead code.
#![allow(dead_code, unused_imports, unused_macros)]

use perflens_core::{Held, LockSite, lock_clock};

/// Ends a hold: reads the clock, frees the lock with `unlock` (which
/// returns the acquisition), and records the acquisition at `site`.
#[inline(always)]
pub(crate) fn release(site: &LockSite, shared: bool, unlock: impl FnOnce() -> Held) {
    let release = lock_clock();
    let held = unlock();
    site.released(held, release, shared);
}

/// Waits at `site` as a contended acquisition (the first, non-blocking
/// try failed): `acquire` blocks for the original's guard.
#[inline(always)]
pub(crate) fn contended<G>(site: &LockSite, acquire: impl FnOnce() -> G) -> (G, Held) {
    let waiting = site.contended();
    let g = acquire();
    (g, waiting.acquired())
}

/// As [`contended`], for an acquisition that may give up (a timeout).
#[inline(always)]
pub(crate) fn contended_opt<G>(
    site: &LockSite,
    acquire: impl FnOnce() -> Option<G>,
) -> Option<(G, Held)> {
    let waiting = site.contended();
    let g = acquire()?;
    Some((g, waiting.acquired()))
}

/// `Debug` and `Display` of guards: the value's own.
macro_rules! fmt_guard {
    ($($g:ident),*) => {$(
        impl<T: ?Sized + ::std::fmt::Debug> ::std::fmt::Debug for $g<'_, T> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Debug::fmt(&**self, f)
            }
        }

        impl<T: ?Sized + ::std::fmt::Display> ::std::fmt::Display for $g<'_, T> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(&**self, f)
            }
        }
    )*};
}
pub(crate) use fmt_guard;

/// A measured guard `$name` over the original's guard `$inner` (kept
/// beside its lock's site and acquisition): derefs to the value (and
/// mutably, given `DerefMut`), ends its hold when dropped (`$shared`: a
/// read acquisition), with the value's `Debug` and `Display`.
macro_rules! guard {
    ($(#[$m:meta])* $name:ident = $($inner:ident)::+, shared = $shared:literal $(, $mutable:ident)?) => {
        $(#[$m])*
        #[clippy::has_significant_drop]
        pub struct $name<'a, T: ?Sized + 'a> {
            inner: ::std::mem::ManuallyDrop<$($inner)::+<'a, T>>,
            site: &'a ::perflens_core::LockSite,
            held: ::perflens_core::Held,
        }

        impl<'a, T: ?Sized + 'a> $name<'a, T> {
            #[inline(always)]
            fn new(
                g: $($inner)::+<'a, T>,
                site: &'a ::perflens_core::LockSite,
                held: ::perflens_core::Held,
            ) -> Self {
                $name {
                    inner: ::std::mem::ManuallyDrop::new(g),
                    site,
                    held,
                }
            }
        }

        impl<T: ?Sized> ::std::ops::Deref for $name<'_, T> {
            type Target = T;
            #[inline(always)]
            fn deref(&self) -> &T {
                &self.inner
            }
        }

        $(impl<T: ?Sized> ::std::ops::$mutable for $name<'_, T> {
            #[inline(always)]
            fn deref_mut(&mut self) -> &mut T {
                &mut self.inner
            }
        })?

        impl<T: ?Sized> Drop for $name<'_, T> {
            #[inline]
            fn drop(&mut self) {
                $crate::sync::kernel::release(self.site, $shared, || {
                    // SAFETY: dropped once, here; never used after.
                    unsafe { ::std::mem::ManuallyDrop::drop(&mut self.inner) };
                    self.held
                });
            }
        }

        $crate::sync::kernel::fmt_guard!($name);
    };
}
pub(crate) use guard;

/// What every measured lock type `$lock` has alike: `with_label`, and
/// `Default` and `From` named after their caller's place.
macro_rules! lock_common {
    ($($lock:ident),*) => {$(
        impl<T> $lock<T> {
            /// The lock, its row named `label` (`perflens::lock!` calls it).
            pub const fn with_label(mut self, label: &'static str) -> $lock<T> {
                self.site.set_label(label);
                self
            }
        }

        impl<T: Default> Default for $lock<T> {
            #[track_caller]
            fn default() -> $lock<T> {
                $lock::new(T::default())
            }
        }

        impl<T> From<T> for $lock<T> {
            #[track_caller]
            fn from(t: T) -> $lock<T> {
                $lock::new(t)
            }
        }
    )*};
}
pub(crate) use lock_common;

/// What the locks that wrap the original lock whole (its field `inner`:
/// parking_lot's, tokio's) have alike: their constructors (`new: const`
/// for a const one) over the original's of the same name, `into_inner`,
/// `get_mut`, and the original's `Debug`.
macro_rules! inner_common {
    ($($lock:ident = $orig:ty { $($new:ident $(: $c:ident)?),* }),* $(,)?) => {$(
        impl<T> $lock<T> {
            $(
                /// A new unlocked lock of `t`, named after the place of
                /// this call (or `perflens::lock!`).
                #[track_caller]
                pub $($c)? fn $new(t: T) -> $lock<T> {
                    let site = ::perflens_core::LockSite::new("", ::std::panic::Location::caller());
                    $lock { site, inner: <$orig>::$new(t) }
                }
            )*

            /// The value, the lock consumed.
            pub fn into_inner(self) -> T {
                self.inner.into_inner()
            }
        }

        impl<T: ?Sized> $lock<T> {
            /// The value, borrowed mutably (not counted).
            pub fn get_mut(&mut self) -> &mut T {
                self.inner.get_mut()
            }
        }

        impl<T: ?Sized + ::std::fmt::Debug> ::std::fmt::Debug for $lock<T> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Debug::fmt(&self.inner, f)
            }
        }
    )*};
}
pub(crate) use inner_common;

/// A try now, or else `wait` (which may give up: a timeout), as a
/// contended acquisition.
#[inline(always)]
pub(crate) fn try_or_wait<G>(
    site: &LockSite,
    now: Option<G>,
    wait: impl FnOnce() -> Option<G>,
) -> Option<(G, Held)> {
    match now {
        Some(g) => Some((g, Held::now())),
        None => contended_opt(site, wait),
    }
}
