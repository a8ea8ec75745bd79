#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod alloc;

pub use alloc::{human, Allocator, Exhausted, Fence, OrderedAllocator, Usage};
