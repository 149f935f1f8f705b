//! `tracing` as input (feature `tracing`): a program already instrumented
//! with `tracing` (`#[tracing::instrument]`, `info_span!`) gets perflens's
//! tables, hot paths, busy and wait times and timeline from its spans,
//! without new annotations:
//!
//! ```
//! # #[cfg(feature = "tracing")] {
//! use tracing_subscriber::layer::SubscriberExt;
//! let session = perflens::Session::builder().ignore_env().start().unwrap();
//! let subscriber = tracing_subscriber::registry().with(perflens::tracing::layer());
//! tracing::subscriber::with_default(subscriber, || {
//!     let span = tracing::info_span!("load");
//!     let _entered = span.enter();
//! });
//! let report = session.finish();
//! assert_eq!(report.functions[0].calls, 1);
//! # }
//! ```
//!
//! Each span is a frame named after its target and name
//! (`my_app::db::query` for `#[instrument] fn query` in `my_app::db`),
//! under the frame where the span was created. A span entered once is a
//! call of a function row; a span entered and exited once per poll (an
//! `async fn` under `#[instrument]`, or `.instrument(span)`) is a future:
//! its row turns async (busy, wait and polls) once one of its spans is
//! entered twice, and its parent is where it was created, whichever
//! thread polls it. `tracing` enters a future's span once more to drop
//! the future (since 0.1.38): that enter is not counted as a poll. A
//! future dropped before it completed is counted as completed (its span
//! does not say). Spans of a name are recorded whatever their fields.

use perflens_core::span::{Entered, Span};
use perflens_core::{Callsite, CallsiteKind};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::RwLock;
use tracing_core::span::{Attributes, Id};
use tracing_core::{Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The layer; see the module's documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct PerflensLayer {
    _private: (),
}

/// The layer that records `tracing` spans in the running perflens
/// session: add it to a `tracing_subscriber::registry()`.
pub fn layer() -> PerflensLayer {
    PerflensLayer::default()
}

/// The callsites of one span name: the function one, and the future one
/// of the same name, registered once a span of it is polled.
struct Names {
    sync: &'static Callsite,
    future: &'static Callsite,
}

/// Callsites by span metadata (its address: metadata are `'static`).
static NAMES: RwLock<Option<HashMap<usize, &'static Names>>> = RwLock::new(None);

fn no_here() -> &'static str {
    ""
}

/// The callsites of spans with `meta`, made (and leaked: one per span
/// site in the program) the first time.
fn names(meta: &'static Metadata<'static>) -> &'static Names {
    let key = meta as *const Metadata<'static> as usize;
    // A thread making spans in a loop makes them at one place.
    if let Ok(Some(n)) = LAST_NAMES.try_with(|l| l.get().filter(|(k, _)| *k == key).map(|(_, n)| n))
    {
        return n;
    }
    let n = shared_names(meta, key);
    let _ = LAST_NAMES.try_with(|l| l.set(Some((key, n))));
    n
}

thread_local! {
    /// The span site this thread made a span at last, and its callsites.
    static LAST_NAMES: std::cell::Cell<Option<(usize, &'static Names)>> = const { std::cell::Cell::new(None) };
}

/// [`names`], from the process-wide table.
fn shared_names(meta: &'static Metadata<'static>, key: usize) -> &'static Names {
    if let Some(n) =
        (NAMES.read().unwrap_or_else(|e| e.into_inner()).as_ref()).and_then(|m| m.get(&key))
    {
        return n;
    }
    let _internal = perflens_core::Internal::enter();
    let mut map = NAMES.write().unwrap_or_else(|e| e.into_inner());
    map.get_or_insert_with(HashMap::new)
        .entry(key)
        .or_insert_with(|| {
            let name: &'static str =
                Box::leak(format!("{}::{}", meta.target(), meta.name()).into_boxed_str());
            Box::leak(Box::new(Names {
                sync: Box::leak(Box::new(Callsite::new(name, no_here))),
                future: Box::leak(Box::new(Callsite::new(name, no_here))),
            }))
        })
}

/// A span's record, in its registry extensions.
struct Recorded {
    span: Option<Span>,
    names: &'static Names,
}

thread_local! {
    /// The spans this thread entered and has not exited, innermost last.
    static ENTERED: RefCell<Vec<(u64, Entered)>> = const { RefCell::new(Vec::new()) };
}

impl<S> tracing_subscriber::Layer<S> for PerflensLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !perflens_core::is_recording() {
            return;
        }
        let names = names(attrs.metadata());
        let span = Span::new(names.sync);
        if let Some(s) = ctx.span(id) {
            let _internal = perflens_core::Internal::enter();
            s.extensions_mut().insert(Recorded {
                span: Some(span),
                names,
            });
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(s) = ctx.span(id) else { return };
        let mut ext = s.extensions_mut();
        let Some(r) = ext.get_mut::<Recorded>() else {
            return;
        };
        let Some(entered) = r.span.as_mut().and_then(Span::enter) else {
            return;
        };
        let _internal = perflens_core::Internal::enter();
        let _ = ENTERED.try_with(|v| v.borrow_mut().push((id.into_u64(), entered)));
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let key = id.into_u64();
        let entered = ENTERED
            .try_with(|v| {
                let mut v = v.borrow_mut();
                let at = v.iter().rposition(|(k, _)| *k == key)?;
                Some(v.remove(at).1)
            })
            .ok()
            .flatten();
        let Some(entered) = entered else { return };
        let Some(s) = ctx.span(id) else { return };
        let mut ext = s.extensions_mut();
        if let Some(span) = ext.get_mut::<Recorded>().and_then(|r| r.span.as_mut()) {
            span.exit(entered);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(s) = ctx.span(&id) else { return };
        let Some(mut r) = s.extensions_mut().remove::<Recorded>() else {
            return;
        };
        let Some(span) = r.span.take() else { return };
        // A future's span is entered once per poll and once more to drop
        // the future (`tracing` 0.1.38 and later): two enters or more
        // make it a future, and the last one was no poll.
        let polled = span.entered() >= 2;
        if polled {
            r.names.future.register_as(CallsiteKind::Async);
        }
        span.close(polled);
    }
}
