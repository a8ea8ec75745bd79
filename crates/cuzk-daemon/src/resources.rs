//! What the box has, as the daemon's defaults see it: cuzk-pipeline's
//! [`cuzk_pipeline::host`] (memory from `/proc/meminfo` and the cgroup limit,
//! cores from the affinity and CPU quota), re-exported under the daemon's name.

pub use cuzk_pipeline::host::{cgroup_memory_limit, cores, memory, memory_source, physical_memory};
