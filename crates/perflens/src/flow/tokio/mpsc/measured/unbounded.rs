//! tokio's unbounded mpsc channel, measured: its endpoints share a count
//! of the messages in it (tokio's unbounded channel does not tell its
//! length).

use super::*;

/// What an unbounded channel's endpoints share: the messages in it.
struct Queued(AtomicIsize);

fn queued() -> Arc<Queued> {
    let _internal = perflens_core::Internal::enter();
    Arc::new(Queued(AtomicIsize::new(0)))
}

pair! {
    /// The sending half of a measured unbounded tokio channel.
    UnboundedSender(mpsc::UnboundedSender) { queued: Arc<Queued> = q.clone() },
    /// The receiving half of a measured unbounded tokio channel.
    UnboundedReceiver(mpsc::UnboundedReceiver) {
        waiting: Wait = Wait::default(),
        queued: Arc<Queued> = q
    };
    |_, _| None; let q = queued()
}

weak! {
    /// An unbounded sender that does not keep the channel open; not
    /// counted as a sender.
    WeakUnboundedSender = mpsc::WeakUnboundedSender of UnboundedSender { queued: Arc<Queued> },
    |w, inner| UnboundedSender { inner, count: SenderCount::new(w.site), queued: w.queued.clone() }
}

impl<T> UnboundedSender<T> {
    /// Sends without waiting (the channel is unbounded); hands the
    /// message back when the receiver is gone.
    pub fn send(&self, message: T) -> Result<(), SendError<T>> {
        let site = self.site();
        match self.inner.send(Envelope::seal(message, site, site.stamp())) {
            Ok(()) => {
                // A receive that took it first makes the count low for
                // a moment, never high.
                let q = self.queued.0.fetch_add(1, Ordering::Relaxed) + 1;
                site.sent(Some(q.max(0) as usize));
                Ok(())
            }
            Err(e) => Err(e.opened()),
        }
    }

    delegate!(closed, is_closed, same_channel, strong_count, weak_count);
}

impl<T> WeakUnboundedSender<T> {
    delegate!(strong_count, weak_count);
}

impl<T> UnboundedReceiver<T> {
    receiver_methods!();

    #[inline(always)]
    fn got(&self, env: Envelope<T>) -> T {
        self.queued.0.fetch_sub(1, Ordering::Relaxed);
        env.received(self.site())
    }
}

opaque_debug!(
    Sender,
    WeakSender,
    Permit<'_>,
    PermitIterator<'_>,
    OwnedPermit,
    Receiver,
    UnboundedSender,
    WeakUnboundedSender,
    UnboundedReceiver
);

clone_fields!(
    Sender { inner, count },
    UnboundedSender {
        inner,
        count,
        queued
    }
);
