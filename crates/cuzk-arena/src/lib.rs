#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod alloc;
mod plan;

pub use alloc::{human, Allocator, Exhausted, Fence, OrderedAllocator, Usage};
pub use plan::{
    Footprints, PlanError, Shape, SrsMode, StageBytes, VramPlan, G1_BYTES, G2_BYTES, MIN_CHUNK,
    SCALAR_BYTES,
};
