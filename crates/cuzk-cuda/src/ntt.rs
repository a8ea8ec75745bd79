//! Fr NTTs on the GPU (kernels/ntt/ntt.cu): forward, inverse, coset forward
//! and coset inverse, sizes 2^0 … 2^28, in place, natural order in and out,
//! with bellperson's `EvaluationDomain` conventions (ω = ROOT_OF_UNITY^(2^(32−k)),
//! coset generator g = 7, the inverse scales by 1/n); plus the H step
//! h = (a·b − c)/Z on the coset.
//!
//! Twiddle tables do not depend on the size: they are built once per device
//! (≈ 34 MiB, most of it the 2^20 powers of ω_(2^20)) on first use and stay
//! resident.

use blstrs::Scalar as Fr;
use cuzk_field::limbs::FrLimbs;
use ff::{Field, PrimeField};

use crate::decl::{self, NttPass};
use crate::device::{grid, DeviceBuffer, Gpu, Stream};
use crate::error::{ensure, DriverContext, Result};
use crate::ffi::device_repr;
use crate::launch::Kernel;
use cudarc::driver::LaunchConfig;

/// Largest supported transform: 2^28 (kernels/ntt/ntt.cu MAX_LOG).
pub const MAX_LOG_N: u32 = 28;
const HALF_LOG: u32 = 14;
const BLK_LOG: u32 = 10;
/// Sub-transforms up to 2^MID_LOG points take their four-step twiddles from
/// one table of ω_(2^20) powers (32 MiB) instead of a product of two lookups.
const MID_LOG: u32 = 20;
/// Threads of the elementwise kernels (digit reversal, H step).
const THREADS: u32 = 256;
/// log₂ of the tiled digit reversal's tile side (16: kernels/ntt/ntt.cu RT).
const REVERSE_TILE_LOG: u32 = 4;

/// Launch shape of the NTT passes. [`NttConfig::for_log_n`] is what measured
/// best on the H200 (see kernels/ntt/NOTES.md); the benchmark sweeps the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NttConfig {
    /// log₂ of the elements a block holds in shared memory (32 B each):
    /// 10 (32 KiB), 11 (64 KiB) or 12 (128 KiB; needs a GPU that allows it).
    pub tile_log: u32,
    /// Threads per block of a pass: 256 or 512.
    pub threads: u32,
    /// Register cap of the pass kernel: 0 (the compiler's choice, ≤ 128),
    /// 80 or 64 (more blocks resident per SM: `ntt_pass`, `ntt_pass_r80`,
    /// `ntt_pass_r64`, and the swapping passes likewise).
    pub max_regs: u32,
    /// Do the first two and the last DIF levels of every pass of ≥ 2^3
    /// points in registers as the values are loaded and stored (two fewer
    /// trips through shared memory and barriers per pass).
    pub fuse_edges: bool,
    /// Three-pass plans (a, m, a): undo the digit reversal in the middle
    /// pass (it writes column (k_1, j_3) to column (j_3, k_1)) instead of in
    /// a pass of its own; needs 2^(tile_log − m) ≥ 4. Other plans, and tiles
    /// too small, keep the separate reversal pass.
    pub fuse_reversal: bool,
    /// Read and write the vector with the evict-first cache hint, so that
    /// the streamed 4 GiB (at 2^27) leave the twiddle tables in L2.
    pub stream_hint: bool,
}

/// The pass kernel for each register cap (kernels/ntt/ntt.cu).
const PASS_KERNELS: [(u32, Kernel<NttPass>); 3] = [
    (0, decl::ntt_pass),
    (80, decl::ntt_pass_r80),
    (64, decl::ntt_pass_r64),
];
/// The digit-swapping middle pass for each register cap (kernels/ntt/ntt.cu).
const SWAP_PASS_KERNELS: [(u32, Kernel<NttPass>); 3] = [
    (0, decl::ntt_swap_pass),
    (80, decl::ntt_swap_pass_r80),
    (64, decl::ntt_swap_pass_r64),
];

impl NttConfig {
    /// The launch shape [`ntt`] uses for 2^log_n points. H200, 2026-11-30
    /// (kernels/ntt/NOTES.md, runs 5 and 6): from 2^19 up, 64 KiB tiles with
    /// the ≤80-register pass (3 blocks per SM): 2^27 forward 42.9 ms against
    /// 50.6 for the first default, 2^24 4.80 against 5.37; up to 2^18 the
    /// first default (32 KiB tiles, no cap), whose smaller blocks spread over
    /// more SMs: 2^16 0.050 ms against 0.080, 2^18 0.090 against 0.096.
    /// Both fusions and the cache hint are on at every size (run 8: 2^27
    /// forward 37.2 ms; without the fused reversal 39.6, without the fused
    /// edge levels 37.8, without the hint 37.3).
    pub fn for_log_n(log_n: u32) -> Self {
        let (tile_log, max_regs) = if log_n <= 18 { (10, 0) } else { (11, 80) };
        NttConfig {
            tile_log,
            threads: 256,
            max_regs,
            fuse_edges: true,
            fuse_reversal: true,
            stream_hint: true,
        }
    }

    /// Every launch shape the kernels are built for: tiles of 2^10..2^12
    /// points (32–128 KiB), 256 or 512 threads, each pass variant (no
    /// register cap, ≤ 80, ≤ 64), all with both fusions and the cache hint;
    /// then the two shapes of [`NttConfig::for_log_n`] with each of those
    /// off. The tests run them all; `ntt_bench` times them.
    pub fn all() -> impl Iterator<Item = NttConfig> {
        let shapes = (10..=12).flat_map(|tile_log| {
            [256, 512].into_iter().flat_map(move |threads| {
                [0, 80, 64].map(move |max_regs| NttConfig {
                    tile_log,
                    threads,
                    max_regs,
                    fuse_edges: true,
                    fuse_reversal: true,
                    stream_hint: true,
                })
            })
        });
        let unfused = [18, 19].into_iter().flat_map(|log_n| {
            [
                (false, false, true),
                (true, false, true),
                (false, true, true),
                (true, true, false),
                (false, false, false),
            ]
            .map(|(fuse_edges, fuse_reversal, stream_hint)| NttConfig {
                fuse_edges,
                fuse_reversal,
                stream_hint,
                ..NttConfig::for_log_n(log_n)
            })
        });
        shapes.chain(unfused)
    }
}

// Pass flags (kernels/ntt/ntt.cu).
const F_INVERSE: u32 = 1;
const F_COSET_IN: u32 = 2;
const F_TWIDDLE: u32 = 4;
const F_SCALE_N: u32 = 8;
const F_COSET_OUT: u32 = 16;
const F_FUSE_EDGES: u32 = 32;
const F_STREAM: u32 = 64;

/// Which transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NttKind {
    /// Coefficients → evaluations at ω^k.
    Forward,
    /// Evaluations at ω^k → coefficients (scaled by 1/n).
    Inverse,
    /// Coefficients → evaluations at g·ω^k.
    CosetForward,
    /// Evaluations at g·ω^k → coefficients.
    CosetInverse,
}

impl NttKind {
    /// Every kind, in declaration order.
    pub const ALL: [NttKind; 4] = [
        NttKind::Forward,
        NttKind::Inverse,
        NttKind::CosetForward,
        NttKind::CosetInverse,
    ];

    fn is_inverse(self) -> bool {
        matches!(self, NttKind::Inverse | NttKind::CosetInverse)
    }
}

/// The twiddle table set as the kernels take it (device addresses).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub(crate) struct TablesArg {
    w_lo: u64,
    w_hi: u64,
    w_blk: u64,
    g_lo: u64,
    g_hi: u64,
    gi_lo: u64,
    gi_hi: u64,
    w_mid: u64,
}
device_repr!(TablesArg);

/// Resident twiddle tables of one device, and the pass kernel's shared-memory limit.
struct Tables {
    _buffers: Vec<DeviceBuffer<FrLimbs>>,
    arg: TablesArg,
    /// Largest dynamic shared memory a pass block may use on this device.
    max_shared: usize,
    // The stream the tables were allocated on: they are freed in order on it.
    _stream: Stream,
}

fn powers(base: Fr, len: usize) -> Vec<FrLimbs> {
    let mut out = Vec::with_capacity(len);
    let mut x = Fr::ONE;
    for _ in 0..len {
        out.push(FrLimbs::from(x));
        x *= base;
    }
    out
}

fn build_tables(gpu: &Gpu) -> Result<Tables> {
    // ω28 = ROOT_OF_UNITY^(2^(32 − 28)): the 2^28-th root every size's ω is a power of.
    let omega28 = Fr::ROOT_OF_UNITY.pow_vartime([1u64 << (Fr::S - MAX_LOG_N)]);
    let omega_blk = omega28.pow_vartime([1u64 << (MAX_LOG_N - BLK_LOG)]);
    let g = Fr::MULTIPLICATIVE_GENERATOR;
    let g_inv = g.invert().expect("g ≠ 0");
    let half = 1usize << HALF_LOG;
    let step = [1u64 << HALF_LOG];
    let host = [
        powers(omega28, half),
        powers(omega28.pow_vartime(step), half),
        powers(omega_blk, 1 << BLK_LOG),
        powers(g, half),
        powers(g.pow_vartime(step), half),
        powers(g_inv, half),
        powers(g_inv.pow_vartime(step), half),
        powers(
            omega28.pow_vartime([1u64 << (MAX_LOG_N - MID_LOG)]),
            1 << MID_LOG,
        ),
    ];
    let stream = gpu.new_stream()?;
    let buffers = host
        .iter()
        .map(|t| stream.upload_new(t))
        .collect::<Result<Vec<_>>>()?;
    stream.synchronize()?;
    let p = |i: usize| buffers[i].device_ptr();
    let arg = TablesArg {
        w_lo: p(0),
        w_hi: p(1),
        w_blk: p(2),
        g_lo: p(3),
        g_hi: p(4),
        gi_lo: p(5),
        gi_hi: p(6),
        w_mid: p(7),
    };
    // Opt the pass kernel in to as much shared memory as the largest tile needs
    // and the device allows.
    let max_shared = gpu.max_shared_per_block_optin()?.min(32 << 12);
    for (_, kernel) in PASS_KERNELS.into_iter().chain(SWAP_PASS_KERNELS) {
        let f = gpu.function(kernel)?;
        crate::ffi::set_max_dynamic_shared_bytes(&f, max_shared)
            .cuda("cuFuncSetAttribute", || {
                format!("{}: {max_shared} B of dynamic shared memory", kernel.name())
            })?;
    }
    Ok(Tables {
        _buffers: buffers,
        arg,
        max_shared,
        _stream: stream,
    })
}

/// The pass sizes (log₂ of each) for a transform of 2^log_n: one pass up to
/// 2^10, else two equal passes, else three of the form (a, m, a): a
/// palindrome, so that the final digit reversal is an involution.
pub fn pass_plan(log_n: u32) -> Vec<u32> {
    if log_n <= BLK_LOG {
        return vec![log_n];
    }
    if log_n % 2 == 0 && log_n / 2 <= BLK_LOG {
        return vec![log_n / 2, log_n / 2];
    }
    let a = log_n.div_ceil(3);
    vec![a, log_n - 2 * a, a]
}

/// Runs the transform `kind` in place on `data`, whose length must be a
/// power of two ≤ 2^28. Queued on `stream`; nothing is waited for.
pub fn ntt(stream: &Stream, data: &mut DeviceBuffer<FrLimbs>, kind: NttKind) -> Result<()> {
    let log_n = data.len().max(1).trailing_zeros();
    ntt_with(stream, data, kind, NttConfig::for_log_n(log_n))
}

/// [`ntt`] with an explicit launch shape (for tuning).
pub fn ntt_with(
    stream: &Stream,
    data: &mut DeviceBuffer<FrLimbs>,
    kind: NttKind,
    config: NttConfig,
) -> Result<()> {
    let n = data.len();
    ensure(
        decl::ntt_pass.name(),
        n.is_power_of_two() && n <= 1 << MAX_LOG_N,
        || format!("length {n} is not a power of two in 1..=2^{MAX_LOG_N}"),
    )?;
    let log_n = n.trailing_zeros();
    if log_n == 0 {
        return Ok(()); // every transform of one element is the identity
    }
    let tables = stream.gpu().extension("ntt_tables", build_tables)?;
    let NttConfig {
        tile_log,
        threads,
        max_regs,
        fuse_edges,
        fuse_reversal,
        stream_hint,
    } = config;
    let kernel_for = |kernels: [(u32, Kernel<NttPass>); 3]| {
        kernels
            .iter()
            .find(|(r, _)| *r == max_regs)
            .map(|&(_, kernel)| kernel)
    };
    let (Some(pass_kernel), Some(swap_kernel)) =
        (kernel_for(PASS_KERNELS), kernel_for(SWAP_PASS_KERNELS))
    else {
        return ensure(decl::ntt_pass.name(), false, || {
            format!("config {config:?}: max_regs must be 0, 80 or 64")
        });
    };
    ensure(
        pass_kernel.name(),
        (10..=12).contains(&tile_log) && (threads == 256 || threads == 512),
        || format!("config {config:?}: tile_log must be 10..=12 and threads 256 or 512"),
    )?;
    let n_inv = FrLimbs::from(Fr::from(n as u64).invert().expect("n ≠ 0 in Fr"));
    let plan = pass_plan(log_n);
    let inverse = kind.is_inverse();
    // The swapping middle pass takes 4·2^g columns, g ≤ a − 1 (SwapCols).
    let swap = fuse_reversal && plan.len() == 3 && tile_log >= plan[1] + 2;
    let mut after = plan.iter().sum::<u32>();
    for (p, &b) in plan.iter().enumerate() {
        after -= b;
        let last = p + 1 == plan.len();
        let (kernel, log_s, log_c) = if swap && p == 1 {
            let a = plan[0];
            (swap_kernel, a, 2 + (tile_log - b - 2).min(a - 1))
        } else if swap && last {
            // Along the top digit, like the first pass (see SwapCols).
            (pass_kernel, log_n - b, (tile_log - b).min(log_n - b))
        } else {
            (pass_kernel, after, (tile_log - b).min(log_n - b))
        };
        let shared = 32usize << (b + log_c);
        ensure(kernel.name(), shared <= tables.max_shared, || {
            format!(
                "a {shared}-byte tile exceeds this GPU's {} bytes of shared memory per block",
                tables.max_shared
            )
        })?;
        let mut flags = if inverse { F_INVERSE } else { 0 };
        if fuse_edges {
            flags |= F_FUSE_EDGES;
        }
        if stream_hint {
            flags |= F_STREAM;
        }
        if p == 0 && kind == NttKind::CosetForward {
            flags |= F_COSET_IN;
        }
        if !last {
            flags |= F_TWIDDLE;
        } else if plan.len() == 1 || swap {
            // The last pass writes natural order: it scales.
            if inverse {
                flags |= F_SCALE_N;
            }
            if kind == NttKind::CosetInverse {
                flags |= F_COSET_OUT;
            }
        }
        let blocks = 1u32 << (log_n - b - log_c);
        let args = (
            data.arg_mut(),
            log_n,
            b,
            log_s,
            log_c,
            flags,
            n_inv,
            tables.arg,
        );
        #[allow(unsafe_code)]
        // SAFETY: the kernel touches positions < 2^log_n =
        // data.len(): the grid covers exactly the 2^(log_n − b) columns (the
        // swap pass: 2^(2a) columns (d1, d3) of 2^m, 4·2^g per block with
        // g ≤ a − 1, as SwapCols requires); the tables hold the sizes the
        // kernel indexes (2^14, 2^14, 2^10, 2^14 ×4, 2^20) and live as long
        // as the Gpu; the dynamic shared memory holds the 2^(b + log_c)-element
        // tile.
        unsafe {
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: shared as u32,
            };
            stream.launch(kernel, cfg, args, || {
                format!("n = 2^{log_n}, pass {p} of {plan:?}, {kind:?}, {config:?}")
            })?;
        }
    }
    if plan.len() > 1 && !swap {
        let b_out = plan[0];
        let b_mid = if plan.len() == 3 { plan[1] } else { 0 };
        let mut flags = 0;
        if inverse {
            flags |= F_SCALE_N;
        }
        if kind == NttKind::CosetInverse {
            flags |= F_COSET_OUT;
        }
        let args = (
            data.arg_mut(),
            log_n,
            b_out,
            b_mid,
            flags,
            n_inv,
            tables.arg,
        );
        // The tiled transpose moves 16-element runs; it needs 16 | 2^b_out.
        let (kernel, cfg) = if b_out >= REVERSE_TILE_LOG {
            let tiles = 1u32 << (b_out - REVERSE_TILE_LOG);
            let cfg = LaunchConfig {
                grid_dim: (tiles, tiles, 1 << b_mid),
                block_dim: (1 << (2 * REVERSE_TILE_LOG), 1, 1),
                shared_mem_bytes: 0,
            };
            (decl::ntt_digit_reverse_tiled, cfg)
        } else {
            (
                decl::ntt_digit_reverse,
                grid((n as u32).div_ceil(THREADS), THREADS),
            )
        };
        #[allow(unsafe_code)]
        // SAFETY: 2·b_out + b_mid = log_n,
        // so every position and its reverse are < n: the plain kernel's threads
        // ≥ n return; the tiled one's grid is (2^b_out/16)² tiles × 2^b_mid
        // with 16×16 threads, each block touching its two tiles only.
        unsafe {
            stream.launch(kernel, cfg, args, || {
                format!("n = 2^{log_n}, {plan:?}, {kind:?}")
            })?;
        }
    }
    Ok(())
}

/// 1/Z on the coset of size n: Z(g·ω^k) = g^n − 1 for every k.
pub(crate) fn z_inv_on_coset(n: usize) -> Fr {
    let g = Fr::MULTIPLICATIVE_GENERATOR;
    (g.pow_vartime([n as u64]) - Fr::ONE)
        .invert()
        .expect("g^n ≠ 1")
}

/// The H step on coset evaluations: `a[i] ← (a[i]·b[i] − c[i]) / Z`, where
/// Z = g^n − 1 and n = a.len() (all three of equal length).
pub fn h_step(
    stream: &Stream,
    a: &mut DeviceBuffer<FrLimbs>,
    b: &DeviceBuffer<FrLimbs>,
    c: &DeviceBuffer<FrLimbs>,
) -> Result<()> {
    let n = a.len();
    ensure(
        decl::ntt_h_step.name(),
        b.len() == n && c.len() == n && n <= u32::MAX as usize,
        || {
            format!(
                "lengths a = {n}, b = {}, c = {} must be equal (and < 2^32)",
                b.len(),
                c.len()
            )
        },
    )?;
    if n == 0 {
        return Ok(());
    }
    let z_inv = FrLimbs::from(z_inv_on_coset(n));
    let args = (a.arg_mut(), b.arg(), c.arg(), z_inv, n as u32);
    #[allow(unsafe_code)]
    // SAFETY: all three buffers hold n elements, threads ≥ n return.
    unsafe {
        stream.launch(
            decl::ntt_h_step,
            grid((n as u32).div_ceil(THREADS), THREADS),
            args,
            || format!("n = {n}"),
        )
    }
}

/// The lean H step's first half: `a[i] ← a[i]·b[i]` on coset evaluations
/// (then `b` may be freed before c is made). [`h_finish`] completes it;
/// together they give [`h_step`]'s values bit for bit.
pub fn h_mul(
    stream: &Stream,
    a: &mut DeviceBuffer<FrLimbs>,
    b: &DeviceBuffer<FrLimbs>,
) -> Result<()> {
    let n = a.len();
    ensure(
        decl::ntt_h_mul.name(),
        b.len() == n && n <= u32::MAX as usize,
        || {
            format!(
                "lengths a = {n}, b = {} must be equal (and < 2^32)",
                b.len()
            )
        },
    )?;
    if n == 0 {
        return Ok(());
    }
    let args = (a.arg_mut(), b.arg(), n as u32);
    #[allow(unsafe_code)]
    // SAFETY: both buffers hold n elements, threads ≥ n return.
    unsafe {
        stream.launch(
            decl::ntt_h_mul,
            grid((n as u32).div_ceil(THREADS), THREADS),
            args,
            || format!("n = {n}"),
        )
    }
}

/// The lean H step's second half: `a[i] ← (a[i] − c[i]) / Z` (Z = g^n − 1,
/// n = a.len()), after [`h_mul`].
pub fn h_finish(
    stream: &Stream,
    a: &mut DeviceBuffer<FrLimbs>,
    c: &DeviceBuffer<FrLimbs>,
) -> Result<()> {
    let n = a.len();
    ensure(
        decl::ntt_h_finish.name(),
        c.len() == n && n <= u32::MAX as usize,
        || {
            format!(
                "lengths a = {n}, c = {} must be equal (and < 2^32)",
                c.len()
            )
        },
    )?;
    if n == 0 {
        return Ok(());
    }
    let z_inv = FrLimbs::from(z_inv_on_coset(n));
    let args = (a.arg_mut(), c.arg(), z_inv, n as u32);
    #[allow(unsafe_code)]
    // SAFETY: both buffers hold n elements, threads ≥ n return.
    unsafe {
        stream.launch(
            decl::ntt_h_finish,
            grid((n as u32).div_ceil(THREADS), THREADS),
            args,
            || format!("n = {n}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_palindromes_within_limits() {
        for log_n in 1..=MAX_LOG_N {
            let plan = pass_plan(log_n);
            assert_eq!(plan.iter().sum::<u32>(), log_n, "{log_n}: {plan:?}");
            assert!(
                plan.iter().all(|&b| (1..=BLK_LOG).contains(&b)),
                "{log_n}: {plan:?}"
            );
            let rev: Vec<u32> = plan.iter().rev().copied().collect();
            assert_eq!(plan, rev, "{log_n}: {plan:?}");
        }
        assert_eq!(pass_plan(27), vec![9, 9, 9]);
    }
}
