//! The plan's room: what a batch, H's kept buckets and the ring's buffers
//! ahead may take, and what streamed matrices cost, at the demo and the
//! real shapes.

use super::*;

#[test]
fn a_batch_of_32_gib_porep_partitions_fits_only_where_a_card_has_room_for_their_scalars() {
    let shape = porep_32gib_deferred();
    // Each member after the first holds its H scalars (2^27) and aux
    // values (130.2 M), two ranked bitmaps (8.51 GB), and at 2^23-point
    // chunks its light sections' kept points and scalars (3 × 2^20 G1,
    // 2^19 G2: 0.52 GB).
    let member = crate::batch::member_bytes(&shape, 1 << 23);
    println!("member at 2^23: {}", human(member));
    assert!((9_020_000_000..9_040_000_000).contains(&member), "{member}");
    // Under the cards' own plans there is no room for a second member up
    // to 40 GiB (a streamed key's plan fills the card) nor from 80 GiB (a
    // resident key has nothing to share); at 48 GiB, with the G2 MSM's
    // scratch sized for a kept buffer, a second member fits.
    for gib in [12u64, 16, 24, 32, 40, 48, 80, 141] {
        let plan = VramPlan::new(shape, gib * GIB, &CudaFootprints).unwrap();
        let room = if gib == 48 { 2 } else { 1 };
        assert_eq!(plan.batch_room(), room, "{gib} GiB: {plan}");
    }
    // The key streamed by choice on an 80 GB card (the 2026-12-06 H100
    // run's layout, 76.25 GiB of arena): room for seven (the ring and the
    // scratch inside the MSM stage, beside the members' scalars).
    let plan = VramPlan::with_matrices(
        shape,
        76 * GIB + GIB / 4,
        SrsMode::Streamed { chunk: 1 << 23 },
        HPoly::Full,
        MatrixLayout::Resident,
        &CudaFootprints,
    );
    assert!(plan.fits(), "{plan}");
    let room = plan.batch_room();
    println!(
        "76.25 GiB, streamed: peak {}, room for {room}",
        human(plan.peak())
    );
    assert_eq!(room, 7, "{plan}");
    // a, b, c on the host: the members' scalars would stream; no batch.
    let host = VramPlan::with_layout(
        Shape {
            device_abc: None,
            ..shape
        },
        76 * GIB + GIB / 4,
        SrsMode::Streamed { chunk: 1 << 23 },
        HPoly::Full,
        &CudaFootprints,
    );
    assert_eq!(host.batch_room(), 1, "{host}");
}

/// H's kept buckets off (`PlanOptions::kept_h`, for measuring against):
/// the same layout at every streamed budget, no buckets, and the room they
/// took back in the ring where it fits.
#[test]
fn kept_buckets_off_leave_the_layout_and_give_the_room_back() {
    let shape = porep_32gib_deferred();
    let off = PlanOptions::default().with_kept_h(false);
    for gib in [12u64, 16, 24, 32, 40, 48, 80] {
        let on = VramPlan::new(shape, gib * GIB, &CudaFootprints).unwrap();
        let plain = VramPlan::new_with(shape, gib * GIB, &CudaFootprints, off).unwrap();
        assert_eq!(plain.h_kept, None, "{gib} GiB: {plain}");
        assert_eq!(
            (plain.mode, plain.h_poly, plain.matrices_streamed()),
            (on.mode, on.h_poly, on.matrices_streamed()),
            "{gib} GiB"
        );
        assert!(
            plain.fits() && plain.ring_slots() >= on.ring_slots(),
            "{gib} GiB: {plain}"
        );
        if let Some(c) = on.h_kept {
            let extra = CudaFootprints.msm_g1_kept(on.msm_len, c);
            assert_eq!(on.scratch_bytes, plain.scratch_bytes + extra, "{gib} GiB");
        }
    }
}

/// The 2^`k` demo circuit's shape with its a, b, c deferred to the device
/// (the recording's real matrix bytes and terms).
fn demo_deferred_shape(k: u32) -> Shape {
    use cuzk_synth::precompiled::{record, witness, DeferredAbc};
    use cuzk_synth::DemoCircuit;
    let r1cs = record(DemoCircuit::new(k, 0.95, 1)).unwrap();
    let d = DeferredAbc::new(r1cs.content_id(), std::sync::Arc::new(r1cs));
    let w = d
        .synthesized(witness(DemoCircuit::new(k, 0.95, 2)).unwrap())
        .unwrap();
    crate::witness_shape(&w)
}

/// A tiny circuit under a large budget fits dozens of workers and a batch
/// of thousands: H's kept buckets may cost some of those, never a worker
/// or batch member that would run (the H100's gpu_prover run of 2026-12-06
/// found 2^10 in chunks of 64 under 76.25 GiB without them: they cost 5 of
/// a batch room of 759,205).
#[test]
fn kept_buckets_for_a_tiny_circuit_under_a_large_budget() {
    let budget = 76 * GIB + GIB / 4;
    let mode = SrsMode::Streamed { chunk: 64 };
    let plan = VramPlan::with_matrices(
        demo_deferred_shape(10),
        budget,
        mode,
        HPoly::Full,
        MatrixLayout::Resident,
        &CudaFootprints,
    )
    .with_kept_h(&CudaFootprints);
    assert!(plan.workers_that_fit() > SHIFTED_H_WORKERS, "{plan}");
    assert!(
        plan.batch_room() > crate::plan::room::BATCH_COUNTED,
        "{plan}"
    );
    assert!(plan.h_kept.is_some(), "{plan}");
    assert!(plan.fits(), "{plan}");
}

/// Streamed matrices never ask for more device memory than resident ones:
/// the chunk buffers in flight (`PINNED_SETS` of them) stay below the
/// matrices' bytes at the demo recordings' real sizes (at 2^10 and 2^16
/// chunks of half the longest matrix outgrew them once the copies ran
/// eight chunks ahead).
#[test]
fn streamed_matrices_take_less_than_resident_ones() {
    for k in [10u32, 14] {
        let mut shape = demo_deferred_shape(k);
        let resident = VramPlan::with_mode(shape, 0, SrsMode::Resident, &CudaFootprints);
        let abc = shape.device_abc.as_mut().unwrap();
        abc.stream_terms = Some(abc.chunk_terms());
        let staging = cuzk_cuda::abc::streamed_bytes(abc.coeffs, abc.chunk_terms());
        assert!(
            staging < abc.matrix_bytes,
            "2^{k}: {staging} against {abc:?}"
        );
        let streamed = VramPlan::with_mode(shape, 0, SrsMode::Resident, &CudaFootprints);
        assert!(
            streamed.peak() < resident.peak(),
            "2^{k}: streamed {streamed} against resident {resident}"
        );
    }
}

/// A streamed key's first ring buffers beside the stages before the MSMs
/// (`VramPlan::ring_ahead`): within the partition's peak, so the plan's
/// peak, layout and ring are the same with them as without; none with the
/// key resident or the option off.
#[test]
fn ring_ahead_fits_beside_the_h_polynomial_within_the_peak() {
    let shape = porep_32gib_deferred();
    let off = PlanOptions::default().with_ring_ahead(false);
    // The H100's arenas too: each budget less its CUDA context (543 MiB on
    // 2026-12-06: 16 GiB → 15.47 GiB, 2^23 chunks and the lean H), and less
    // the local memory the driver takes later (~330 MiB more since).
    let h100 = [16u64, 24, 32].map(|g| g * GIB - 543 * (1 << 20));
    let h100_later = [16u64, 24, 32].map(|g| g * GIB - 871 * (1 << 20));
    for bytes in [12u64, 15, 16, 23, 24, 31, 32, 40, 48, 80]
        .map(|g| g * GIB)
        .into_iter()
        .chain(h100)
        .chain(h100_later)
    {
        let gib = bytes.div_ceil(GIB);
        let on = VramPlan::new(shape, bytes, &CudaFootprints).unwrap();
        let plain = VramPlan::new_with(shape, bytes, &CudaFootprints, off).unwrap();
        assert_eq!(plain.ring_ahead, 0, "{gib} GiB: {plain}");
        assert_eq!(
            VramPlan {
                ring_ahead: 0,
                ..on.clone()
            },
            plain,
            "{gib} GiB"
        );
        println!("{gib:>4} GiB: {on}");
        let SrsMode::Streamed { chunk } = on.mode else {
            assert_eq!(on.ring_ahead, 0, "{gib} GiB: {on}");
            continue;
        };
        let before = on.before_msm_peak();
        assert!(before > 0, "{gib} GiB: {on}");
        let slot = chunk as u64 * G1_BYTES;
        assert!(
            before + on.ring_ahead as u64 * slot <= on.partition_peak,
            "{gib} GiB: {on}"
        );
        assert!(
            on.ring_ahead <= RING_AHEAD.min(on.ring_slots()),
            "{gib} GiB"
        );
        // At the cards' budgets (and a GiB less, their arenas) the first
        // chunk's copy is hidden: at least one buffer fits.
        if matches!(gib, 15 | 16 | 23 | 24 | 31 | 32) {
            assert!(on.ring_ahead >= 1, "{} GiB: {on}", human(bytes));
        }
    }
}

/// Parked batches at the real shape (a 32 GiB PoRep partition, 1.69 M of
/// its aux values neither 0 nor 1) under the H100's arenas for the cards'
/// budgets (the budget less the context and the driver's memory): on a
/// 16 GiB card, where no held member fits, ten parked members fit the
/// pass at twice the plan's chunk, within the budget at every stage; a
/// bound on the members (host memory) is kept; the pass holds fewer
/// members than the budget allows nowhere, more nowhere.
#[test]
fn parked_batches_of_32_gib_porep_partitions_fit_the_small_cards() {
    let shape = porep_32gib_deferred();
    let others = 1_690_000;
    for (card, arena) in [(16u64, 15.14f64), (24, 23.14), (32, 31.14)] {
        let budget = (arena * GIB as f64) as u64;
        let plan = VramPlan::new(shape, budget, &CudaFootprints).unwrap();
        assert_eq!(plan.batch_room(), 1, "{card} GiB: {plan}");
        let parked = plan.parked_batch(&CudaFootprints, others, 10);
        let Some(p) = parked else {
            // Where the matrices stay resident a parked member is slower
            // than a partition alone (measured): none there.
            println!("{card:>3} GiB: no parked batch under {plan}");
            assert!(plan.matrices_streamed().is_none() && card > 16, "{plan}");
            continue;
        };
        let (SrsMode::Streamed { chunk: own }, SrsMode::Streamed { chunk }) =
            (plan.mode, p.plan.mode)
        else {
            panic!("streamed plans");
        };
        println!(
            "{card:>3} GiB: {} members at 2^{} (own 2^{}), member {}, pass {}, peak {} of {}, host {}",
            p.members,
            chunk.trailing_zeros(),
            own.trailing_zeros(),
            human(p.member_bytes),
            human(p.pass_bytes),
            human(p.peak()),
            human(budget),
            human(p.host_bytes())
        );
        assert!(chunk >= own * PARKED_CHUNK_GAIN, "{card} GiB");
        assert!(p.peak() <= budget, "{card} GiB");
        assert_eq!(p.plan.h_kept, None);
        assert_eq!(p.plan.ring_slots(), 4);
        assert_eq!(
            p.plan.before_msm_peak(),
            plan.before_msm_peak(),
            "{card} GiB"
        );
        // A compact member: ~0.1 GB of aux values, 0.05 GB of bitmaps, and
        // its kept others (an eighth of a chunk's points per light section).
        let kept = crate::kept::kept_bytes(chunk, 3, 1);
        assert!(p.member_bytes > kept && p.member_bytes < kept + 160_000_000);
        // One more member would not fit, unless the bound stopped it.
        let more = p.pass_bytes + p.member_bytes + (p.plan.peak() - p.plan.partition_peak);
        assert!(p.members == 10 || more > budget, "{card} GiB");
        if card == 16 {
            assert_eq!((p.members, chunk), (10, 1 << 23), "{card} GiB");
        }
        let fewer = plan.parked_batch(&CudaFootprints, others, 3).unwrap();
        assert_eq!(fewer.members, p.members.min(3), "{card} GiB");
        assert!(plan.parked_batch(&CudaFootprints, others, 1).is_none());
    }
}
