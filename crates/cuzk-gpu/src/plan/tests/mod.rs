//! The planner's arithmetic at demo and real shapes.

use super::*;
use crate::resident::KeyShape;
use cuzk_synth::CircuitShape;

/// One 32 GiB PoRep partition, the real circuit's counts (as issue
/// #13's H200 run synthesized it; docs/facts.md).
pub(crate) fn porep_32gib() -> CircuitShape {
    CircuitShape {
        num_constraints: 130_278_869,
        num_inputs: 328,
        num_aux: 130_169_893,
        a_aux_density: 129_753_292,
        b_input_density: 1,
        b_aux_density: 33_112_281,
        domain_log2: 27,
    }
}

/// The default options with H over shifted bases allowed.
fn shifted() -> PlanOptions {
    PlanOptions::default().with_shifted_h(true)
}

/// Footprints shaped like the real kernels': linear in the length.
struct Linear;

impl Footprints for Linear {
    fn msm_g1(&self, len: usize) -> u64 {
        len as u64 * 60 + (200 << 20)
    }
    fn msm_g2(&self, len: usize) -> u64 {
        len as u64 * 80 + (400 << 20)
    }
    fn msm_g1_shifted(&self, len: usize, h: ShiftedH) -> u64 {
        len as u64 * 70 + (u64::from(h.sets) << 20)
    }
    fn shifted_h_shape(&self, len: usize, bytes: u64) -> Option<ShiftedH> {
        // Two copies, if they fit.
        let h = ShiftedH {
            window_bits: 22,
            sets: 6,
            copies: 2,
        };
        (h.extra_bytes(len) + self.msm_g1_shifted(len, h) <= bytes).then_some(h)
    }
    fn msm_g1_kept(&self, _len: usize, window_bits: u32) -> u64 {
        // The buckets alone: ⌈256/c⌉·2^(c−1) XYZZ points of 192 bytes.
        (u64::from(256u32.div_ceil(window_bits)) << (window_bits - 1)) * 192
    }
    fn kept_h_window(&self, h: usize, chunk: usize, bytes: u64) -> Option<u32> {
        // The widest of c = 16..=20 that fits, for a section of two chunks or more.
        (h > chunk)
            .then(|| {
                (16..=20)
                    .rev()
                    .find(|&c| self.msm_g1_kept(chunk, c) <= bytes)
            })
            .flatten()
    }
    fn classifier(&self, len: usize) -> u64 {
        len as u64 * 8
    }
    fn gather(&self, len: usize) -> u64 {
        len as u64 / 8
    }
    fn fixed(&self) -> u64 {
        8 << 20
    }
}

fn demo_shape(log_n: u32) -> Shape {
    let n = 1usize << log_n;
    Shape {
        domain: n,
        h: n - 1,
        l: n - 40,
        a: n - 100,
        b_g1: n / 4,
        b_g2: n / 4,
        aux: n - 40,
        device_abc: None,
    }
}

const GIB: u64 = 1 << 30;

#[test]
fn a_large_budget_keeps_the_key_resident() {
    let plan = VramPlan::new(demo_shape(24), 140 * GIB, &Linear).unwrap();
    assert_eq!(plan.mode, SrsMode::Resident);
    assert_eq!(plan.srs_device_bytes, demo_shape(24).srs_bytes());
    assert!(plan.fits());
    assert_eq!(plan.largest_stage().name, "h_poly");
    assert_eq!(plan.partition_peak, 3 * (1 << 24) * 32);
    assert!(plan.workers_that_fit() >= 2, "{plan}");
}

/// a, b, c on the device: the matrices count as resident bytes, the
/// `abc` stage holds z, its classes and the three outputs, and z (whose
/// tail is the aux values) stays through H; without room for the matrices
/// beside the key the plan evaluates a, b, c on the host.
#[test]
fn device_abc_counts_the_matrices_and_z() {
    let n: u64 = 1 << 24;
    let base = demo_shape(24);
    let z = base.aux + 41;
    let shape = Shape {
        device_abc: Some(DeviceAbc {
            matrix_bytes: 3 * GIB,
            z,
            coeffs: 2466,
            terms: 1 << 30,
            stream_terms: None,
        }),
        ..base
    };
    let plan = VramPlan::new(shape, 140 * GIB, &Linear).unwrap();
    assert!(plan.abc_on_device(), "{plan}");
    assert_eq!(plan.matrix_bytes, 3 * GIB);
    let kept = z as u64 * 32;
    let stage = |name| plan.stages.iter().find(|s| s.name == name).unwrap().bytes;
    assert_eq!(stage("abc"), 3 * n * 32 + z as u64 * 33);
    assert_eq!(stage("h_poly"), 3 * n * 32 + kept);
    assert_eq!(stage("msm_h"), n * 32 + kept);
    assert_eq!(stage("msm_l"), kept);
    assert_eq!(plan.largest_stage().name, "abc");
    let host = VramPlan::new(base, 140 * GIB, &Linear).unwrap();
    assert_eq!(
        plan.peak(),
        host.peak() + 3 * GIB + stage("abc") - 3 * n * 32
    );
    assert!(plan.to_string().contains("a, b, c on the device"), "{plan}");

    // Room for the key and the abc stage with a chunk's staging, not for
    // the matrices: streamed, nothing counted as resident. A plan fits a
    // budget b when its bytes + b/64 + 64 MiB (the margin) <= b.
    let fit_at = |p: &VramPlan| ((p.peak() - p.margin + (64 << 20)) * 64).div_ceil(63);
    let staging = cuzk_cuda::abc::streamed_bytes(2466, STREAM_TERMS);
    let mut streamed_shape = shape;
    streamed_shape.device_abc.as_mut().unwrap().stream_terms = Some(STREAM_TERMS);
    let streamed_min = fit_at(&VramPlan::with_mode(
        streamed_shape,
        140 * GIB,
        SrsMode::Resident,
        &Linear,
    ));
    assert!(streamed_min < fit_at(&plan));
    let plan = VramPlan::new(shape, streamed_min, &Linear).unwrap();
    assert!(plan.abc_on_device(), "{plan}");
    assert_eq!(plan.matrices_streamed(), Some(STREAM_TERMS), "{plan}");
    assert_eq!(plan.matrix_bytes, 0);
    let streamed_abc = plan.stages.iter().find(|s| s.name == "abc").unwrap().bytes;
    assert_eq!(streamed_abc, stage("abc") + staging);
    assert!(
        plan.to_string().contains("streamed from the host"),
        "{plan}"
    );

    // Room for the key, not for the streamed abc stage with all three
    // outputs: the lean H makes b and c inside it, two vectors at a time.
    let tight = streamed_min - 1024;
    let plan = VramPlan::new(shape, tight, &Linear).unwrap();
    assert!(plan.abc_on_device(), "{plan}");
    assert_eq!(plan.h_poly, HPoly::Lean, "{plan}");
    assert_eq!(plan.mode, SrsMode::Resident);
    assert_eq!(plan.matrix_bytes, 0);
    assert!(plan.stages.iter().all(|s| s.name != "abc"), "{plan}");
    assert_eq!(
        plan.stages
            .iter()
            .find(|s| s.name == "h_poly")
            .unwrap()
            .bytes,
        2 * n * 32 + z as u64 * 33 + staging
    );
    assert!(plan.to_string().contains("lean H"), "{plan}");
    // Room for the key and a host-abc partition, not for the lean stage.
    let lean_min = fit_at(&plan);
    let host = host_plan_under(base, lean_min - 1024);
    let plan = VramPlan::new(shape, lean_min - 1024, &Linear).unwrap();
    assert!(!plan.abc_on_device(), "{plan}");
    assert_eq!(plan.mode, SrsMode::Resident);
    assert_eq!(plan, host);
    // A streamed key evaluates on the device from streamed matrices, and z
    // stays for L, A and B (their scalars gathered there a chunk at a
    // time): their chunks cross among H's, inside H's stage.
    let streamed = VramPlan::with_mode(
        shape,
        140 * GIB,
        SrsMode::Streamed { chunk: 1 << 20 },
        &Linear,
    );
    assert!(streamed.abc_on_device());
    assert!(streamed.interleaved, "{streamed}");
    assert_eq!(streamed.matrices_streamed(), Some(STREAM_TERMS));
    assert_eq!(streamed.matrix_bytes, 0);
    assert_eq!(streamed.gather_len, base.aux);
    let chunk_bufs = (1u64 << 20) * 32;
    let names: Vec<&str> = streamed.stages.iter().map(|s| s.name).collect();
    assert_eq!(names, ["abc", "h_poly", "msm_h"], "{streamed}");
    // A's and B's bitmaps and their word offsets for the gathers by rank,
    // and their inputs (41 of z's values are not aux); the light sections'
    // kept others, an eighth of a chunk each (L, A, B_G1 in G1: 2^17
    // points of 96 bytes and their scalars; B_G2's 2^16 of 192), with
    // two allocations' alignment each.
    let ranked = 2 * (cuzk_cuda::gather::RankedBitmap::bytes_for(base.aux) + 41 * 32);
    let kept_others = 3 * ((1u64 << 17) * 128 + 512) + (1u64 << 16) * 224 + 512;
    // The ring (four buffers and those beyond, here from the room below
    // the a, b, c stage) and the scratch live only while the MSMs run:
    // inside their stage, not beside the H polynomial.
    let beyond_four = (streamed.ring_slots() as u64 - 4) * (1 << 20) * 96;
    assert!(streamed.ring_slots() > 4, "{streamed}");
    assert_eq!(
        streamed.stages[2].bytes,
        n * 32
            + chunk_bufs
            + kept
            + ranked
            + kept_others
            + beyond_four
            + streamed.srs_device_bytes
            + streamed.scratch_bytes
    );
    assert_eq!(streamed.worker_bytes(), streamed.partition_peak);
    assert!(streamed.to_string().contains("L, A and B chunks among H's"));
}

fn host_plan_under(shape: Shape, budget: u64) -> VramPlan {
    VramPlan::new(shape, budget, &Linear).unwrap()
}

/// A 32 GiB PoRep partition (the real circuit's counts, as issue #13's
/// H200 run synthesized it) with the kernels' own footprints, under the
/// arena the H200 gave that run (135.05 GiB): the key stays resident and
/// one worker fits beside it with room for a second.
#[test]
fn a_32_gib_porep_partition_plans_resident_on_an_h200() {
    let shape = Shape::of_circuit(&porep_32gib());
    let arena = 145_006_595_840; // 135.05 GiB
    let plan = VramPlan::new(shape, arena, &CudaFootprints).unwrap();
    println!("{plan}");
    assert_eq!(plan.mode, SrsMode::Resident, "{plan}");
    // 130.2 M + 129.8 M + 33.1 M G1 points, 33.1 M G2 points, 2^27 - 1 for H.
    assert_eq!(plan.srs_device_bytes, shape.srs_bytes());
    assert!(plan.fits() && plan.workers_that_fit() >= 2, "{plan}");
    assert_eq!(plan.largest_stage().name, "h_poly", "{plan}");
}

/// H over shifted bases on the same H200 arena, a, b, c on the device
/// from resident matrices as the pre-compiled PoRep runs: room for
/// two copies of H beside the key, the matrices and two workers, and no
/// worker fewer than without them.
#[test]
fn a_32_gib_porep_partition_keeps_h_shifted_beside_two_workers() {
    let circuit = porep_32gib();
    // The recording's device bytes and table as the H200 run logged
    // them (5.51 GiB of matrices).
    let shape =
        Shape::of_circuit(&circuit).with_device_abc(&circuit, 5_916_000_000, 1_526, 309_405_051);
    let arena = 145_006_595_840; // 135.05 GiB
    let plain = VramPlan::new(shape, arena, &CudaFootprints).unwrap();
    let shifted = VramPlan::new_with(shape, arena, &CudaFootprints, shifted()).unwrap();
    println!("{plain}\n{shifted}");
    assert_eq!(plain.h_shift, None);
    let h = shifted.h_shift.expect("room for H's copies");
    assert!(h.copies >= 2 && h.sets < 13, "{shifted}");
    assert!(
        shifted.fits() && shifted.workers_that_fit() >= 2,
        "{shifted}"
    );
    assert!(plain.workers_that_fit() >= 2, "{plain}");
    assert_eq!(
        shifted.srs_device_bytes,
        plain.srs_device_bytes + h.extra_bytes(shape.h)
    );
    assert!(
        shifted.to_string().contains("H over shifted bases"),
        "{shifted}"
    );
    assert_eq!(
        KeyShape::of_plan(&shifted).bytes(),
        shifted.srs_device_bytes,
        "admission counts the copies"
    );
}

/// Without room for a copy beside the partitions that fit, H stays
/// plain; a streamed plan never keeps H shifted.
#[test]
fn h_stays_plain_without_room() {
    let shape = demo_shape(24);
    let plain = VramPlan::new(shape, 140 * GIB, &Linear).unwrap();
    let roomy = VramPlan::new_with(shape, 140 * GIB, &Linear, shifted()).unwrap();
    assert!(roomy.h_shift.is_some(), "{roomy}");
    assert!(roomy.workers_that_fit() >= SHIFTED_H_WORKERS, "{roomy}");
    // Just enough for one plain partition: no copy fits.
    let fit_at = |p: &VramPlan| ((p.peak() - p.margin + (64 << 20)) * 64).div_ceil(63);
    let tight = fit_at(&plain);
    let p = VramPlan::new_with(shape, tight, &Linear, shifted()).unwrap();
    assert_eq!(p.mode, SrsMode::Resident, "{p}");
    assert_eq!(p.h_shift, None, "{p}");
    let streamed = VramPlan::new_with(demo_shape(26), 16 * GIB, &Linear, shifted()).unwrap();
    assert!(matches!(streamed.mode, SrsMode::Streamed { .. }));
    assert_eq!(streamed.h_shift, None);
}

#[test]
fn a_small_budget_streams_in_the_largest_chunk_that_fits() {
    let shape = demo_shape(26);
    assert!(shape.srs_bytes() > 16 * GIB, "the key alone exceeds 16 GiB");
    let plan = VramPlan::new(shape, 16 * GIB, &Linear).unwrap();
    let SrsMode::Streamed { chunk } = plan.mode else {
        panic!("expected streaming: {plan}");
    };
    assert!(plan.fits());
    assert!(chunk.is_power_of_two() && chunk >= MIN_CHUNK);
    // Twice the chunk would not have fit.
    let bigger = VramPlan::with_mode(
        shape,
        16 * GIB,
        SrsMode::Streamed { chunk: chunk * 2 },
        &Linear,
    );
    assert!(chunk * 2 > shape.longest_msm() || !bigger.fits());
    assert_eq!(plan.workers_that_fit(), 1);
}

#[test]
fn too_small_a_budget_names_both_numbers() {
    let err = VramPlan::new(demo_shape(26), GIB, &Linear).unwrap_err();
    assert_eq!(err.budget, GIB);
    assert!(err.need > GIB);
    assert_eq!(err.stage, "h_poly");
    let msg = err.to_string();
    assert!(msg.contains("needs at least"), "{msg}");
    assert!(msg.contains("the budget has 1.00 GiB"), "{msg}");
    assert!(msg.contains("2^26"), "{msg}");
}

#[test]
fn peak_adds_up() {
    let plan = VramPlan::with_mode(demo_shape(20), 8 * GIB, SrsMode::Resident, &Linear);
    assert_eq!(
        plan.peak(),
        plan.srs_device_bytes + plan.scratch_bytes + plan.partition_peak + plan.margin
    );
    let n = 1u64 << 20;
    let expect_scratch = Linear.msm_g1(plan.msm_len)
        + Linear.msm_g2(plan.shape.b_g2)
        + Linear.classifier(plan.msm_len)
        + Linear.gather(plan.gather_len)
        + Linear.fixed()
        + Linear.slack();
    assert_eq!(plan.scratch_bytes, expect_scratch);
    assert_eq!(plan.stages[1].bytes, n * 32);
    // A streamed key's ring and scratch are counted inside the MSM stages
    // only: the peak is the larger of the H polynomial and an MSM stage
    // holding them.
    let streamed = VramPlan::with_mode(
        demo_shape(20),
        8 * GIB,
        SrsMode::Streamed { chunk: 1 << 16 },
        &Linear,
    );
    assert!(streamed.scratch_in_msm_stages());
    let msm = streamed
        .stages
        .iter()
        .filter(|s| s.name.starts_with("msm"))
        .map(|s| s.bytes)
        .max()
        .unwrap();
    let h_poly = streamed.stages.iter().find(|s| s.name == "h_poly").unwrap();
    assert!(msm >= streamed.srs_device_bytes + streamed.scratch_bytes);
    assert_eq!(streamed.partition_peak, msm.max(h_poly.bytes));
    assert_eq!(
        streamed.peak(),
        streamed.partition_peak + streamed.matrix_bytes + streamed.margin
    );
}

/// The 32 GiB PoRep partition pre-compiled (a, b, c left to the prover),
/// with the recording's device bytes and table as the H200 run logged them.
fn porep_32gib_deferred() -> Shape {
    let circuit = porep_32gib();
    Shape::of_circuit(&circuit).with_device_abc(&circuit, 5_916_000_000, 1_526, 309_405_051)
}

/// The cards storage providers own, and the H200's arena: every budget from
/// 12 GiB up plans a 32 GiB PoRep partition within the budget (margin
/// included), with the kernels' own footprints; which plan each gets is
/// pinned (docs/small-cards.md has the table this prints).
#[test]
fn a_32_gib_porep_partition_plans_under_every_card_budget() {
    let shape = porep_32gib_deferred();
    let mut rows = Vec::new();
    for gib in [12u64, 16, 24, 32, 40, 48, 80, 141] {
        let budget = gib * GIB;
        let plan = VramPlan::new(shape, budget, &CudaFootprints)
            .unwrap_or_else(|e| panic!("{gib} GiB: {e}"));
        assert!(plan.fits() && plan.peak() <= budget, "{gib} GiB: {plan}");
        let chunk = match plan.mode {
            SrsMode::Resident => None,
            SrsMode::Streamed { chunk } => Some(chunk),
        };
        rows.push((
            gib,
            chunk,
            plan.h_poly,
            plan.abc_on_device(),
            plan.matrices_streamed().is_some(),
        ));
        println!("{gib:>4} GiB: {plan}");
        // A streamed key's L, A and B cross among H's chunks whenever a,
        // b, c are on the device (their scalars: z's tail, gathered a chunk
        // at a time), inside H's stage.
        assert_eq!(
            plan.interleaved,
            chunk.is_some() && plan.abc_on_device(),
            "{plan}"
        );
        let names: Vec<&str> = plan.stages.iter().map(|s| s.name).collect();
        assert_eq!(names.contains(&"msm_l"), !plan.interleaved, "{plan}");
        assert_eq!(plan.interleaved, (16..=48).contains(&gib), "{plan}");
        // A streamed key's H chunks go into kept buckets wherever the MSM
        // stage has room for them: at the resident window (c = 20), or one
        // less where the largest chunk leaves room for that only.
        assert_eq!(plan.h_kept.is_some(), (12..=48).contains(&gib), "{plan}");
        assert!(plan.h_kept.is_none_or(|c| c >= 19), "{plan}");
        // The ring's buffers beyond four are counted in the MSM stages (its
        // four in the key's device bytes), and the peak holds with them:
        // they take room below the largest stage, or what the budget leaves
        // above the peak when no second worker or batch member fits there.
        if let Some(chunk) = chunk {
            let slots = plan.ring_slots();
            println!("{gib:>4} GiB: {slots} chunk buffers in the ring");
            assert!(
                (4..=4 + super::EXTRA_RING_SLOTS).contains(&slots),
                "{gib} GiB: {slots}"
            );
            let extra = (slots - 4) as u64 * chunk as u64 * super::G1_BYTES;
            assert!(
                plan.msm_stage_peak() >= plan.srs_device_bytes + plan.scratch_bytes + extra,
                "{gib} GiB: {plan}"
            );
            assert!(plan.peak() <= budget, "{gib} GiB: {plan}");
            if matches!(gib, 16 | 24 | 32) {
                assert!(
                    slots > 4 || plan.h_kept.is_some(),
                    "{gib} GiB: the budget's room unused: {plan}"
                );
            }
        } else {
            assert_eq!(plan.ring_slots(), 0);
        }
        // The card's own arena is less than its budget (the CUDA context,
        // ~0.8 GiB on an H100, is left out of a budget of bytes): the plans
        // at a GiB less are the ones the cards run, pinned here; the budget
        // itself may afford a larger chunk (16 GiB: 2^23 with c = 19).
        if matches!(gib, 16 | 24 | 32) {
            let less = VramPlan::new(shape, budget - GIB, &CudaFootprints).unwrap();
            println!("{gib:>4} GiB less one: {less}");
            assert!(less.h_kept.is_some(), "{gib} GiB less one: {less}");
            let want = match gib {
                16 => 1 << 22,
                24 => 1 << 23,
                _ => 1 << 24,
            };
            assert_eq!(less.mode, SrsMode::Streamed { chunk: want }, "{less}");
            assert!(
                matches!(plan.mode, SrsMode::Streamed { chunk } if chunk >= want),
                "{plan}"
            );
        }
        // What each budget must get.
        match gib {
            80 | 141 => {
                assert_eq!(plan.mode, SrsMode::Resident, "{plan}");
                assert!(plan.abc_on_device(), "{plan}");
                // At 80 GiB the 2^27-pair MSM scratch (16.8 GiB) leaves no
                // room for the matrices beside the key: they stream.
                assert_eq!(plan.matrices_streamed().is_none(), gib == 141, "{plan}");
                assert_eq!(plan.h_poly, HPoly::Full, "{plan}");
            }
            // The matrices resident beside a streamed key: a, b, c do not
            // cross PCIe (at 24 GiB beside the lean H).
            24..=48 => {
                assert!(chunk.is_some_and(|c| c >= PREFERRED_MIN_CHUNK), "{plan}");
                assert!(plan.abc_on_device(), "{plan}");
                assert_eq!(plan.matrices_streamed(), None, "{plan}");
                assert_eq!(plan.matrix_bytes, shape.device_abc.unwrap().matrix_bytes);
                // (At 24 GiB the full H too, since the ring and the
                // scratch are not beside it.)
                assert_eq!(plan.h_poly, HPoly::Full, "{plan}");
            }
            16 => {
                assert!(chunk.is_some_and(|c| c >= PREFERRED_MIN_CHUNK), "{plan}");
                assert!(plan.abc_on_device(), "{plan}");
                assert_eq!(plan.h_poly, HPoly::Lean, "{plan}");
            }
            _ => {
                assert!(chunk.is_some(), "{plan}");
                assert_eq!(plan.h_poly, HPoly::Lean, "{plan}");
            }
        }
    }
    // A bigger budget never gets a slower layout: streaming chunks never
    // shrink (but where a, b, c move onto the device: at 12 GiB, with them
    // on the host, the MSM stage holds no z and takes a larger chunk than
    // at 16), the lean H never returns, a, b, c never leave the device.
    for w in rows.windows(2) {
        let ((_, c0, h0, d0, _), (gib, c1, h1, d1, _)) = (w[0], w[1]);
        assert!(
            c1.is_none() || c0.is_some_and(|c0| c0 <= c1.unwrap()) || (!d0 && d1),
            "{gib} GiB"
        );
        assert!(!(h0 == HPoly::Full && h1 == HPoly::Lean), "{gib} GiB");
        assert!(!d0 || d1, "{gib} GiB");
    }
}

/// Below the smallest plan a budget is refused up front with both numbers;
/// at the smallest it plans.
#[test]
fn the_smallest_budget_for_a_32_gib_partition_is_found_and_below_it_refused() {
    let shape = porep_32gib_deferred();
    let err = VramPlan::new(shape, 4 * GIB, &CudaFootprints).unwrap_err();
    let need = err.need;
    assert!(need > 4 * GIB && need < 12 * GIB, "{err}");
    let msg = err.to_string();
    assert!(msg.contains("the budget has 4.00 GiB"), "{msg}");
    assert!(msg.contains("2^27"), "{msg}");
    // The smallest budget that plans: the margin grows with the budget, so
    // search rather than read it off `need`.
    let (mut lo, mut hi) = (4 * GIB, 12 * GIB);
    while hi - lo > (1 << 20) {
        let mid = lo + (hi - lo) / 2;
        if VramPlan::new(shape, mid, &CudaFootprints).is_ok() {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let plan = VramPlan::new(shape, hi, &CudaFootprints).unwrap();
    println!("smallest budget {}: {plan}", human(hi));
    assert!(plan.fits());
    let below = VramPlan::new(shape, lo, &CudaFootprints).unwrap_err();
    assert!(below.need > lo, "{below}");
}

/// A key's own shape (what decides, before any witness, whether a device
/// streams the key and so pins it in host memory; the plans of such shapes
/// are pinned above) is its circuit's: the fixture 2^10 demo key against a
/// demo circuit's synthesized shape.
#[test]
fn a_keys_shape_is_its_circuits() {
    use cuzk_groth16::encoding::PointCheck;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/demo-k10-sha95.params"
    );
    let key =
        cuzk_groth16::ProvingKey::read_from_path(std::path::Path::new(path), PointCheck::OnCurve)
            .unwrap();
    let w = cuzk_synth::synthesize(cuzk_synth::DemoCircuit::new(10, 0.95, 3)).unwrap();
    assert_eq!(Shape::of_key(&key), Shape::of_circuit(&w.shape()));
}

mod room;
