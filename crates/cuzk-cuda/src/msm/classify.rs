//! [`Classifier`]: each scalar zero, one or other, with the ones' and the
//! others' indices compacted in increasing order on the device, so a prover
//! skips zeros, batch-sums ones and runs Pippenger over the others only.

use std::fmt;

use cuzk_field::limbs::FrLimbs;

use super::MAX_LEN;
use crate::decl;
use crate::device::{grid, DeviceBuffer, KernelOut, MappedBuffer, Stream};
use crate::error::{ensure, Result};
use crate::scan::{exclusive_scan, SCAN_TILE};

/// kernels/msm/scalars.cu CLASSIFY_TILE.
const CLASSIFY_TILE: usize = 256 * 8;

/// How many scalars of each class the last [`Classifier::classify`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassCounts {
    /// Scalars equal to 0 (their points are skipped).
    pub zeros: usize,
    /// Scalars equal to 1 (their points are summed, not multiplied).
    pub ones: usize,
    /// Every other scalar (the Pippenger MSM's share).
    pub others: usize,
}

/// Splits scalars into zero / one / other on the device, writing the ones'
/// and the others' indices (increasing) into resident buffers.
pub struct Classifier {
    stream: Stream,
    max_len: usize,
    ones_per_tile: DeviceBuffer<u32>,
    others_per_tile: DeviceBuffer<u32>,
    ones_offsets: DeviceBuffer<u32>,
    others_offsets: DeviceBuffer<u32>,
    tile_sums: DeviceBuffer<u32>,
    /// The two counts, read by the host in place (mapped).
    totals: MappedBuffer<u32>,
    ones: DeviceBuffer<u32>,
    others: DeviceBuffer<u32>,
}

impl fmt::Debug for Classifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Classifier")
            .field("max_len", &self.max_len)
            .finish_non_exhaustive()
    }
}

impl Classifier {
    /// Device bytes [`Classifier::new`]`(max_len)` takes from the arena.
    pub fn bytes_for(max_len: usize) -> u64 {
        let tiles = max_len.div_ceil(CLASSIFY_TILE).max(1) as u64;
        let words = 4 * (tiles + 1) + tiles.div_ceil(SCAN_TILE as u64) + 1 + 2;
        (words + 2 * max_len.max(1) as u64) * 4 + 8 * crate::arena::ALIGN
    }

    /// A classifier for up to `max_len` scalars (2 × 4 bytes per scalar of
    /// index space).
    pub fn new(stream: &Stream, max_len: usize) -> Result<Self> {
        ensure(decl::msm_classify_count.name(), max_len < MAX_LEN, || {
            format!("{max_len} scalars")
        })?;
        let tiles = max_len.div_ceil(CLASSIFY_TILE).max(1);
        Ok(Classifier {
            stream: stream.clone(),
            max_len,
            ones_per_tile: stream.alloc(tiles)?,
            others_per_tile: stream.alloc(tiles)?,
            ones_offsets: stream.alloc(tiles + 1)?,
            others_offsets: stream.alloc(tiles + 1)?,
            tile_sums: stream.alloc(tiles.div_ceil(SCAN_TILE) + 1)?,
            totals: MappedBuffer::new(stream, 2)?,
            ones: stream.alloc(max_len.max(1))?,
            others: stream.alloc(max_len.max(1))?,
        })
    }

    /// Classifies `scalars` (waits for the two counts).
    pub fn classify(&mut self, scalars: &DeviceBuffer<FrLimbs>) -> Result<ClassCounts> {
        let n = scalars.len();
        ensure(decl::msm_classify_count.name(), n <= self.max_len, || {
            format!("{n} scalars, sized for {}", self.max_len)
        })?;
        if n == 0 {
            return Ok(ClassCounts::default());
        }
        let s = &self.stream;
        let tiles = n.div_ceil(CLASSIFY_TILE) as u32;
        let args = (
            scalars.arg(),
            n as u32,
            self.ones_per_tile.arg_mut(),
            self.others_per_tile.arg_mut(),
        );
        #[allow(unsafe_code)]
        // SAFETY: reads scalars[0..n), writes one count per tile (tiles ≤
        // per-tile buffer lengths).
        unsafe {
            s.launch(decl::msm_classify_count, grid(tiles, 256), args, || {
                format!("{n} scalars")
            })?;
        }
        exclusive_scan(
            s,
            &self.ones_per_tile,
            tiles,
            &mut self.tile_sums,
            &mut self.ones_offsets,
            None,
        )?;
        exclusive_scan(
            s,
            &self.others_per_tile,
            tiles,
            &mut self.tile_sums,
            &mut self.others_offsets,
            None,
        )?;
        let args = (
            scalars.arg(),
            n as u32,
            self.ones_offsets.arg(),
            self.others_offsets.arg(),
            self.ones.arg_mut(),
            self.others.arg_mut(),
        );
        #[allow(unsafe_code)]
        // SAFETY: writes at most n indices into each list (len ≥ max_len ≥ n).
        unsafe {
            s.launch(decl::msm_classify_scatter, grid(tiles, 256), args, || {
                format!("{n} scalars")
            })?;
        }
        let args = (
            self.ones_offsets.arg_at(tiles as usize),
            self.others_offsets.arg_at(tiles as usize),
            self.totals.out_arg(),
        );
        #[allow(unsafe_code)]
        // SAFETY: reads the totals at index tiles of the offset arrays (tiles
        // + 1 entries each), writes totals[0..2).
        unsafe {
            s.launch(decl::msm_gather_pair_u32, grid(1, 32), args, || {
                "class totals".into()
            })?;
        }
        let totals = self.totals.read()?;
        let (ones, others) = (totals[0] as usize, totals[1] as usize);
        Ok(ClassCounts {
            zeros: n - ones - others,
            ones,
            others,
        })
    }

    /// Indices of the scalars equal to one (first `ones` entries valid).
    pub fn ones(&self) -> &DeviceBuffer<u32> {
        &self.ones
    }

    /// Indices of the other nonzero scalars (first `others` entries valid).
    pub fn others(&self) -> &DeviceBuffer<u32> {
        &self.others
    }
}
