//! The options of hotpath 0.30.3's macros that perflens's do not take:
//! each is rejected with a message that says what it did in hotpath and
//! what the perflens way is, instead of the generic "unknown option".
//! The options whose meaning perflens shares (`percentiles`, `format`,
//! `limit`, `output_path`, `allocator` on `main`; `label` and
//! `future = true` on `measure`) are ordinary options of the macros.
//! docs/migrating-from-hotpath.md has the whole table.

/// The page every message points to.
const GUIDE: &str = "see docs/migrating-from-hotpath.md";

/// hotpath's per-section row limits of `#[hotpath::main]`.
const SECTION_LIMITS: &[&str] = &[
    "functions_limit",
    "channels_limit",
    "streams_limit",
    "futures_limit",
    "threads_limit",
    "rw_locks_limit",
    "mutexes_limit",
];

/// Why `#[perflens::main]` rejects hotpath's option `key`, and what to
/// write instead; `None` when `key` is not one of hotpath's.
pub(crate) fn main_option(key: &str) -> Option<String> {
    if SECTION_LIMITS.contains(&key) {
        return Some(format!(
            "`{key}` is hotpath's row limit for one section; perflens has one row limit for \
             every table: `limit = N` (or PERFLENS_LIMIT=N; `limit = 0` prints every row), and \
             its JSON report (`format = \"json\"`, PERFLENS_JSON=<path>) always holds every \
             row ({GUIDE})."
        ));
    }
    let message = match key {
        "report" => format!(
            "`report` chooses hotpath's report sections; perflens has no section filter: it \
             prints every section that has data. Remove `report`, and read the sections you \
             want from the JSON report (`format = \"json\"`, or PERFLENS_JSON=<path>; fields in \
             docs/report-schema.md) ({GUIDE})."
        ),
        "timeout" => format!(
            "`timeout` (older hotpath; 0.30.3 reads HOTPATH_SHUTDOWN_MS instead) ends the \
             program after a time; perflens never ends a program. Stop it with SIGTERM or \
             Ctrl-C, which still writes the whole report (`timeout 10 ./target/release/app`), \
             or set PERFLENS_JSON=<path> with PERFLENS_JSON_EVERY=<seconds> to keep a fresh \
             report while it runs ({GUIDE})."
        ),
        _ => return None,
    };
    Some(message)
}

/// Why `#[perflens::measure]` rejects hotpath's option `key`, and what
/// to write instead; `None` when `key` is not one of hotpath's.
pub(crate) fn measure_option(key: &str) -> Option<String> {
    let message = match key {
        "log" => format!(
            "`log = true` sends each return value to hotpath's console; perflens records no \
             values, only calls, times and allocations: remove `log`, and log the value \
             yourself (`tracing::debug!`) where you need it ({GUIDE})."
        ),
        "impl_type" => format!(
            "`impl_type` names the type of a method for hotpath; perflens finds it by itself \
             (a method's row is `module::Type::method`): remove `impl_type` ({GUIDE})."
        ),
        _ => return None,
    };
    Some(message)
}
