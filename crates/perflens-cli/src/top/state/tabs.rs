//! What can be on screen, as values: the tabs in their order, the views
//! of the Functions and Data flow tabs, and whether the numbers are rates
//! or totals. These are the choices the keys move between; nothing here
//! reads a picture.

/// The tabs, in their order on screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    /// Per function: timing, allocations or CPU ([`FnView`]).
    Functions,
    /// The hot paths as a tree of frames.
    HotPaths,
    /// Async functions.
    Async,
    /// Threads.
    Threads,
    /// Channels and locks ([`FlowView`]).
    DataFlow,
    /// Bytes in use by path (feature `heap`).
    Memory,
}

impl Tab {
    /// Every tab, in order.
    pub const ALL: [Tab; 6] = [
        Tab::Functions,
        Tab::HotPaths,
        Tab::Async,
        Tab::Threads,
        Tab::DataFlow,
        Tab::Memory,
    ];

    /// Its title on screen.
    pub fn title(self) -> &'static str {
        match self {
            Tab::Functions => "Functions",
            Tab::HotPaths => "Hot paths",
            Tab::Async => "Async",
            Tab::Threads => "Threads",
            Tab::DataFlow => "Data flow",
            Tab::Memory => "Memory",
        }
    }

    pub(super) fn index(self) -> usize {
        Tab::ALL.iter().position(|&t| t == self).unwrap_or(0)
    }
}

/// The views of the Functions tab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FnView {
    /// Calls and latency.
    Timing,
    /// Bytes and allocations.
    Alloc,
    /// Sampled CPU time.
    Cpu,
}

impl FnView {
    /// Its name on screen.
    pub fn title(self) -> &'static str {
        match self {
            FnView::Timing => "timing",
            FnView::Alloc => "allocations",
            FnView::Cpu => "CPU",
        }
    }
}

/// The views of the Data flow tab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowView {
    /// The channel sites.
    Channels,
    /// The lock sites.
    Locks,
}

impl FlowView {
    /// Its name on screen.
    pub fn title(self) -> &'static str {
        match self {
            FlowView::Channels => "channels",
            FlowView::Locks => "locks",
        }
    }

    pub(super) fn other(self) -> FlowView {
        match self {
            FlowView::Channels => FlowView::Locks,
            FlowView::Locks => FlowView::Channels,
        }
    }
}

/// What the numeric columns show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    /// Per second over the last interval (two successive reports).
    Rate,
    /// The totals of the session so far.
    Total,
}
