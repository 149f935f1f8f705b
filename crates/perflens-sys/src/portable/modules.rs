//! No loader to ask (the `std`-only build): no objects listed, none
//! pinned.

use std::ffi::CStr;

use crate::modules::LoadedObject;

/// No count of loaded objects here: 0.
pub fn generation() -> u64 {
    0
}

/// No objects listed here.
pub fn loaded() -> Vec<LoadedObject> {
    Vec::new()
}

/// A reference on a loaded object: never made here.
#[derive(Debug)]
pub struct PinnedObject(());

/// No object is pinned here.
pub fn pin(_name: &CStr) -> Option<PinnedObject> {
    None
}
