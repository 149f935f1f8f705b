//! No `fork` in `std`: nothing to handle.

use crate::fork::ForkHandler;

/// Registers nothing: `false`.
pub fn on_fork(_prepare: ForkHandler, _parent: ForkHandler, _child: ForkHandler) -> bool {
    false
}
