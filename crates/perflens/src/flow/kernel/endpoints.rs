//! Endpoints alive: one counter for senders and receivers, the only way
//! a measured endpoint counts itself.

use perflens_core::FlowSite;

/// One endpoint of a channel made at a site (a sender when `SENDER`, else
/// a receiver), counted alive when made or cloned and until dropped,
/// wherever the original endpoint beside it goes (an owned permit or an
/// owning future holds one).
pub(crate) struct Endpoint<const SENDER: bool>(pub(crate) &'static FlowSite);

/// A sender alive.
pub(crate) type SenderCount = Endpoint<true>;
/// A receiver alive.
pub(crate) type ReceiverCount = Endpoint<false>;

/// A channel made at `site`, of `capacity` (`None`: unbounded): counted
/// made, with its first sender and receiver.
pub(crate) fn made(
    site: &'static FlowSite,
    capacity: Option<usize>,
) -> (SenderCount, ReceiverCount) {
    site.created(capacity);
    (SenderCount::new(site), ReceiverCount::new(site))
}

impl<const SENDER: bool> Endpoint<SENDER> {
    /// Counts a new endpoint (a channel's first, a clone, an upgrade).
    #[inline]
    pub(crate) fn new(site: &'static FlowSite) -> Endpoint<SENDER> {
        if SENDER {
            site.senders(1);
        } else {
            site.receivers(1);
        }
        Endpoint(site)
    }

    /// Its channel's site.
    #[inline(always)]
    pub(crate) fn site(&self) -> &'static FlowSite {
        self.0
    }
}

impl<const SENDER: bool> Clone for Endpoint<SENDER> {
    fn clone(&self) -> Endpoint<SENDER> {
        Endpoint::new(self.0)
    }
}

impl<const SENDER: bool> Drop for Endpoint<SENDER> {
    #[inline]
    fn drop(&mut self) {
        if SENDER {
            self.0.senders(-1);
        } else {
            self.0.receivers(-1);
        }
    }
}

/// `Wrap` for a backend's endpoints `($tx, $rx)` over envelopes: the
/// channel counted made, of the capacity `$cap` (an expression of the
/// original sender `$o` and the constructor's capacity `$c`), and its
/// measured endpoints `$mtx` and `$mrx` (their `inner` the original,
/// their `count` the new count, and the fields given; `let`: a value
/// made after the counts, for those fields).
macro_rules! wrap {
    (
        $($tx:ident)::+, $($rx:ident)::+ =>
        $mtx:ident $({ $($tf:ident: $te:expr),* })?, $mrx:ident $({ $($rf:ident: $re:expr),* })?;
        |$o:pat_param, $c:pat_param| $cap:expr $(; let $v:ident = $init:expr)? $(;)?
    ) => {
        impl<T> $crate::flow::Wrap
            for ($($tx)::+<$crate::flow::Envelope<T>>, $($rx)::+<$crate::flow::Envelope<T>>)
        {
            type Measured = ($mtx<T>, $mrx<T>);
            fn wrap(
                self,
                site: &'static ::perflens_core::FlowSite,
                capacity: Option<usize>,
            ) -> Self::Measured {
                #[allow(unused_variables)]
                let ($o, $c) = (&self.0, capacity);
                let (tx, rx) = $crate::flow::kernel::made(site, $cap);
                $(let $v = $init;)?
                (
                    $mtx { inner: self.0, count: tx $($(, $tf: $te)*)? },
                    $mrx { inner: self.1, count: rx $($(, $rf: $re)*)? },
                )
            }
        }
    };
}
pub(crate) use wrap;

/// A channel's measured endpoints, declared and made: the sender `$tx`
/// (over the backend's `$otx`, a [`SenderCount`] beside it) and the
/// receiver `$rx` (over `$orx`, a [`ReceiverCount`]), each with the
/// fields given and their first values, and their [`wrap!`].
macro_rules! pair {
    (@site $($name:ident),*) => {$(
        impl<T> $name<T> {
            /// Its channel's site.
            #[inline(always)]
            #[allow(dead_code)]
            fn site(&self) -> &'static ::perflens_core::FlowSite {
                self.count.site()
            }
        }
    )*};
    (
        $(#[$tm:meta])* $tx:ident($($otx:ident)::+) $({ $($(#[$tfm:meta])* $tf:ident: $tt:ty = $te:expr),* })?,
        $(#[$rm:meta])* $rx:ident($($orx:ident)::+) $({ $($(#[$rfm:meta])* $rf:ident: $rt:ty = $re:expr),* })?;
        |$o:pat_param, $c:pat_param| $cap:expr $(; let $v:ident = $init:expr)? $(;)?
    ) => {
        $(#[$tm])*
        pub struct $tx<T> {
            inner: $($otx)::+<$crate::flow::Envelope<T>>,
            count: $crate::flow::kernel::SenderCount,
            $($($(#[$tfm])* $tf: $tt),*)?
        }

        $(#[$rm])*
        pub struct $rx<T> {
            inner: $($orx)::+<$crate::flow::Envelope<T>>,
            count: $crate::flow::kernel::ReceiverCount,
            $($($(#[$rfm])* $rf: $rt),*)?
        }

        $crate::flow::kernel::pair!(@site $tx, $rx);

        $crate::flow::kernel::wrap!(
            $($otx)::+, $($orx)::+ => $tx $({ $($tf: $te),* })?, $rx $({ $($rf: $re),* })?;
            |$o, $c| $cap $(; let $v = $init)?
        );
    };
}
pub(crate) use pair;

/// A weak endpoint `$weak` of `$strong` (over the original's weak one
/// and its channel's site; not counted alive, nor keeping the channel
/// open): `$strong::downgrade`, `$weak::upgrade` (`$up`, of the weak
/// endpoint `$w` and the original `$i` upgraded), and `Clone`. The
/// fields given are cloned from the endpoint downgraded.
macro_rules! weak {
    (
        $(#[$m:meta])* $weak:ident = $($orig:ident)::+ of $strong:ident $({ $($x:ident: $xt:ty),* })?,
        |$w:ident, $i:ident| $up:expr
    ) => {
        $(#[$m])*
        pub struct $weak<T> {
            inner: $($orig)::+<$crate::flow::Envelope<T>>,
            site: &'static ::perflens_core::FlowSite,
            $($($x: $xt),*)?
        }

        impl<T> $weak<T> {
            /// The endpoint again, unless its channel has none of its kind
            /// left (or is closed).
            pub fn upgrade(&self) -> Option<$strong<T>> {
                let $w = self;
                self.inner.upgrade().map(|$i| $up)
            }
        }

        impl<T> $strong<T> {
            /// An endpoint that does not keep the channel open.
            pub fn downgrade(&self) -> $weak<T> {
                $weak {
                    inner: self.inner.downgrade(),
                    site: self.count.site(),
                    $($($x: self.$x.clone()),*)?
                }
            }
        }

        impl<T> Clone for $weak<T> {
            fn clone(&self) -> Self {
                $weak { inner: self.inner.clone(), site: self.site, $($($x: self.$x.clone()),*)? }
            }
        }
    };
}
pub(crate) use weak;
