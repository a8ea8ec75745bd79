//! Device-wide exclusive prefix sums of u32 words and a word fill, the two
//! helpers every compaction here builds on (the MSM's bucket offsets and
//! radix histograms, classification, the prover's gather). The kernels are
//! in kernels/msm/scalars.cu.

use crate::decl;
use crate::device::{grid, DeviceBuffer, Stream};
use crate::error::{ensure, Result};
use crate::launch::DevPtrMut;

/// Words per tile of the scan (kernels/msm/scalars.cu SCAN_TILE).
pub(crate) const SCAN_TILE: usize = 256 * 16;

/// dst[0..len) = value.
pub(crate) fn fill_u32(
    s: &Stream,
    buf: &mut DeviceBuffer<u32>,
    value: u32,
    len: u32,
) -> Result<()> {
    ensure(decl::msm_fill_u32.name(), len as usize <= buf.len(), || {
        format!("{len} of {}", buf.len())
    })?;
    if len == 0 {
        return Ok(());
    }
    let blocks = len.div_ceil(256).min(s.gpu().info().multiprocessors * 16);
    let args = (buf.arg_mut(), len, value);
    #[allow(unsafe_code)]
    // SAFETY: writes dst[0..len), len ≤ buf.len().
    unsafe {
        s.launch(decl::msm_fill_u32, grid(blocks, 256), args, || {
            format!("{len} words")
        })
    }
}

/// out[i] = Σ_{k<i} input[k] for i ≤ len (out[len] = total); out2 likewise.
pub(crate) fn exclusive_scan(
    s: &Stream,
    input: &DeviceBuffer<u32>,
    len: u32,
    tile_sums: &mut DeviceBuffer<u32>,
    out: &mut DeviceBuffer<u32>,
    out2: Option<&mut DeviceBuffer<u32>>,
) -> Result<()> {
    let tiles = (len as usize).div_ceil(SCAN_TILE) as u32;
    let n = len as usize;
    ensure(
        decl::msm_scan_tiles.name(),
        input.len() >= n && out.len() > n && out2.as_ref().is_none_or(|o| o.len() > n),
        || format!("scan of {len}: input {}, output {}", input.len(), out.len()),
    )?;
    ensure(
        decl::msm_scan_tile_sums.name(),
        tile_sums.len() > tiles as usize,
        || format!("{tiles} tiles, {} tile sums", tile_sums.len()),
    )?;
    let out2_ptr = out2.map_or(DevPtrMut::null(), |o| o.arg_mut());
    let sizes = || format!("scan of {len} words, {tiles} tiles");
    if tiles > 0 {
        let args = (input.arg(), len, tile_sums.arg_mut());
        #[allow(unsafe_code)]
        // SAFETY: reads in[0..len), writes tile_sums[0..tiles); sizes checked
        // above.
        unsafe {
            s.launch(decl::msm_scan_tile_sums, grid(tiles, 256), args, sizes)?;
        }
    }
    let args = (tile_sums.arg_mut(), tiles, out.arg_mut(), out2_ptr, len);
    #[allow(unsafe_code)]
    // SAFETY: one block; rewrites tile_sums[0..=tiles], writes out[len] and
    // out2[len].
    unsafe {
        s.launch(decl::msm_scan_tile_offsets, grid(1, 1024), args, sizes)?;
    }
    if tiles > 0 {
        let args = (input.arg(), len, tile_sums.arg(), out.arg_mut(), out2_ptr);
        #[allow(unsafe_code)]
        // SAFETY: reads in[0..len) and tile_offsets[0..tiles), writes
        // out[0..len), out2[0..len).
        unsafe {
            s.launch(decl::msm_scan_tiles, grid(tiles, 256), args, sizes)?;
        }
    }
    Ok(())
}
