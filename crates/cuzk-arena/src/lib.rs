#![doc = include_str!("../README.md")]
// Every public item documented, and none `pub` that the crate does not export (both checked
// here, crate by crate, until every crate is clean enough for `[workspace.lints]`).
#![forbid(unsafe_code)]

mod alloc;

pub use alloc::{human, Allocator, Exhausted, Fence, OrderedAllocator, Usage};
