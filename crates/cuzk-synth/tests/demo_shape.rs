//! Demo circuits have exactly `2^k` constraints, and `shape_for` predicts the
//! synthesized shape without synthesizing.

use cuzk_synth::{synthesize, DemoCircuit};

const SHARES: [f64; 4] = [0.0, 0.5, DemoCircuit::DEFAULT_SHA_SHARE, 1.0];

/// Synthesizes the circuit and checks its shape against `shape_for` and `2^k`.
fn check(log_size: u32, sha_share: f64) {
    let circuit = DemoCircuit::new(log_size, sha_share, 11);
    let witness = synthesize(circuit).unwrap();
    let shape = witness.shape();
    assert_eq!(
        shape.num_constraints,
        1 << log_size,
        "2^{log_size} at {sha_share}"
    );
    assert_eq!(shape.domain_log2, log_size);
    assert_eq!(
        shape,
        DemoCircuit::shape_for(log_size, sha_share),
        "2^{log_size} at {sha_share}"
    );
}

#[test]
fn synthesized_shapes_are_exact_powers_of_two() {
    for log_size in 10..=16 {
        for sha_share in SHARES {
            check(log_size, sha_share);
        }
    }
    check(DemoCircuit::MIN_LOG_SIZE, 0.95);
}

#[test]
fn shape_for_extrapolates_many_blocks_exactly() {
    assert_eq!(DemoCircuit::plan_for(17, 0.95).sha_blocks, 4);
    check(17, 0.95);
    assert!(DemoCircuit::plan_for(18, 1.0).sha_blocks >= 9);
    check(18, 1.0);
}

#[test]
fn predicted_shapes_are_exact_at_every_size() {
    for log_size in DemoCircuit::MIN_LOG_SIZE..=DemoCircuit::MAX_LOG_SIZE {
        for sha_share in SHARES {
            let shape = DemoCircuit::shape_for(log_size, sha_share);
            assert_eq!(shape.num_constraints, 1 << log_size);
            assert_eq!(shape.domain_log2, log_size);
            let plan = DemoCircuit::plan_for(log_size, sha_share);
            assert!(plan.chain_len >= 1);
            // The SHA part never exceeds its share.
            let sha_constraints = shape.num_constraints - plan.chain_len - shape.num_inputs;
            assert!(sha_constraints as f64 <= sha_share * (1u64 << log_size) as f64);
        }
    }
}

#[test]
fn sha_blocks_appear_from_two_to_the_fifteen() {
    // (log_size, sha_blocks) at the default share; one block is ~27k constraints.
    let expected = [(10, 0), (14, 0), (15, 1), (16, 2), (17, 4)];
    for (log_size, blocks) in expected {
        let plan = DemoCircuit::plan_for(log_size, DemoCircuit::DEFAULT_SHA_SHARE);
        assert_eq!(plan.sha_blocks, blocks, "2^{log_size}");
    }
    let with_sha = DemoCircuit::new(15, 0.95, 1);
    assert_eq!(
        with_sha.public_inputs().len(),
        3,
        "2 digest elements + product"
    );
    assert_eq!(DemoCircuit::new(14, 0.95, 1).public_inputs().len(), 1);
}

#[test]
fn shapes_with_several_lanes_of_each_kind_are_exact() {
    // 2^19 all SHA: 19 blocks in two lanes; 2^18 no SHA: four chain lanes;
    // 2^20 at the default share: three SHA lanes and one chain lane.
    let plan = DemoCircuit::plan_for(19, 1.0);
    assert_eq!((plan.sha_lanes(), plan.chain_lanes()), (2, 1));
    check(19, 1.0);
    let plan = DemoCircuit::plan_for(18, 0.0);
    assert_eq!((plan.sha_lanes(), plan.chain_lanes()), (0, 4));
    check(18, 0.0);
    let plan = DemoCircuit::plan_for(20, DemoCircuit::DEFAULT_SHA_SHARE);
    assert_eq!((plan.sha_lanes(), plan.chain_lanes()), (3, 1));
    check(20, DemoCircuit::DEFAULT_SHA_SHARE);
}
