//! The Waits rows: one await site in one calling context.

use super::*;

/// One await site: every await at one `expr.await` in the source, over
/// every calling context and thread.
///
/// Its figures come straight from the site's nodes and are never scaled:
/// waits are timed in sampled mode too. In count mode every duration is
/// 0.
///
/// # Completed and cancelled awaits
///
/// An await dropped while suspended (its future cancelled, as a
/// `select!` does with the branches that lost) is counted apart from the
/// completed ones, with its wait so far: the [`completed`](Self::completed)
/// awaits waited [`completed_wait_ns`](Self::completed_wait_ns) in all
/// and `p50_ns`/`p99_ns` are of one of them; the `cancelled` ones waited
/// `cancelled_wait_ns`. So every figure describes one set of awaits, and
/// a site whose awaits are mostly cancelled does not read as "58 s of
/// waiting, each wait 0 ns". The cancelled waits are kept out of the
/// percentiles rather than put in: a cancelled wait ended when something
/// else happened (the `select!` branch that won, a timeout), so its
/// length says how long the awaiting code went on without this await,
/// not how long the awaited thing took, and mixed in it would make the
/// percentiles of a `recv()` that loses every loop those of the loop's
/// period. `count` and `wait_ns` keep both (completed plus cancelled),
/// as the JSON has always had them; the table shows the two sets in
/// their own columns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitRow {
    /// The site's short name: the enclosing function's row name and the
    /// line (`app::handler:42`), with `:column` added when another site
    /// reads the same; `file:line` when no measured function encloses
    /// it.
    pub site: String,
    /// Row name of the measured function (or block) whose future awaits
    /// here; empty when none does.
    pub function: String,
    /// Source file of the `.await`, as `file!()` spells it.
    pub file: String,
    /// 1-based line of the `.await`.
    pub line: u32,
    /// 1-based column of the `.await`.
    pub column: u32,
    /// The awaited expression's text, shortened; empty when unknown.
    pub expr: String,
    /// Awaits: the completed ones plus those dropped while suspended
    /// (`cancelled`); see [`WaitRow::completed`].
    pub count: u64,
    /// Times an await here returned `Pending` (suspensions), summed.
    pub suspended: u64,
    /// Total time the awaits here waited: over every suspension, from
    /// the `Pending` return to the re-poll (to the drop for a cancelled
    /// await), cancelled awaits included (outermost calling contexts
    /// only, so a recursion counts once); see
    /// [`WaitRow::completed_wait_ns`].
    pub wait_ns: u64,
    /// Median wait of one completed await (an await that never suspended
    /// waited 0); `0` when none completed.
    pub p50_ns: u64,
    /// 99th percentile of the wait of one completed await; `0` when none
    /// completed.
    pub p99_ns: u64,
    /// Measured time run inside the awaited futures' polls (measured
    /// functions they called or polled). In sampled mode, the time of
    /// the children's timed calls only (not scaled: see
    /// `measured_children` for what ran).
    pub measured_ns: u64,
    /// Row names of the measured functions that ran directly inside the
    /// awaits here, by their `total_ns` descending.
    pub measured_children: Vec<String>,
    /// True when the awaits here ran no measured code at all: what they
    /// waited on is not measured (measure the awaited function).
    pub uninstrumented: bool,
    /// Awaits dropped while suspended (in `count`).
    pub cancelled: u64,
    /// What the cancelled awaits had waited when they were dropped (in
    /// `wait_ns`), outermost calling contexts only. Absent from reports
    /// written before it (read as 0).
    #[serde(default)]
    pub cancelled_wait_ns: u64,
}

impl WaitRow {
    /// The awaits here that completed: the ones `p50_ns`/`p99_ns`
    /// describe (`count - cancelled`).
    pub fn completed(&self) -> u64 {
        self.count.saturating_sub(self.cancelled)
    }

    /// What the completed awaits waited in all (`wait_ns -
    /// cancelled_wait_ns`).
    pub fn completed_wait_ns(&self) -> u64 {
        self.wait_ns.saturating_sub(self.cancelled_wait_ns)
    }
}
