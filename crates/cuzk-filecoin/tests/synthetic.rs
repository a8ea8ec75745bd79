//! Synthetic sectors at every size pass the C1 check (storage-proofs'
//! vanilla verification and cuzk's per-challenge check of what the circuit
//! enforces) with the sector identity they were made for, are reproducible,
//! and a C1 with one vanilla-proof value changed anywhere is refused before
//! any synthesis, naming the partition and challenge. No key is needed:
//! proving a synthetic sector is `porep_2kib.rs`'s job (it has the keys).

use cuzk_filecoin::synthetic::{supported_names, SyntheticSector};
use cuzk_filecoin::{check_c1, parse_c1, parse_sector_size, Error, ProofType, SectorIdentity};
use filecoin_proofs_api::RegisteredSealProof;

const ACTOR: u64 = 1000;
const SECTOR: u64 = 42;

fn v1_1(size: &str) -> ProofType {
    let bytes = parse_sector_size(size).unwrap();
    let proof = ProofType::ALL
        .into_iter()
        .find(|p| u64::from(p.sector_size()) == bytes && format!("{p:?}").ends_with("V1_1"))
        .unwrap();
    ProofType::new(proof).unwrap()
}

fn request(proof_type: ProofType, seed: u64) -> SyntheticSector {
    SyntheticSector {
        proof_type,
        identity: SectorIdentity::from_actor(ACTOR, SECTOR),
        seed,
    }
}

fn json(request: &SyntheticSector) -> Vec<u8> {
    serde_json::to_vec(&request.generate().unwrap().output).unwrap()
}

#[test]
fn every_size_passes_the_c1_check_for_its_sector_only() {
    for size in ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"] {
        let pt = v1_1(size);
        let r = request(pt, 7);
        let made = r.generate().unwrap();
        assert_eq!(made.challenges % pt.partitions(), 0, "{size}");
        let c1 = parse_c1(&serde_json::to_vec(&made.output).unwrap()).unwrap();
        assert_eq!(c1.proof_type, pt);
        check_c1(&c1, Some(&r.identity)).unwrap_or_else(|e| panic!("{size}: {e}"));
        check_c1(&c1, None).unwrap();
        let other = SectorIdentity::from_actor(ACTOR, SECTOR + 1);
        let err = check_c1(&c1, Some(&other)).unwrap_err();
        assert!(matches!(err, Error::OtherSector(_)), "{size}: {err}");
        eprintln!(
            "{size}: {} challenges, {} opened nodes, {:?}",
            made.challenges, made.opened_nodes, made.elapsed
        );
    }
}

#[test]
fn the_same_request_gives_the_same_bytes() {
    let pt = v1_1("2KiB");
    assert_eq!(json(&request(pt, 3)), json(&request(pt, 3)));
    assert_ne!(json(&request(pt, 3)), json(&request(pt, 4)));
    // The V1 (API 1.0) type of the same size derives another porep id.
    let v1 = ProofType::new(RegisteredSealProof::StackedDrg2KiBV1).unwrap();
    let r = request(v1, 3);
    let c1 = parse_c1(&json(&r)).unwrap();
    check_c1(&c1, Some(&r.identity)).unwrap();
}

#[test]
fn types_it_cannot_make_are_refused_naming_the_supported_ones() {
    let synth = ProofType::new(RegisteredSealProof::StackedDrg2KiBV1_1_Feat_SyntheticPoRep);
    let err = request(synth.unwrap(), 1)
        .generate()
        .unwrap_err()
        .to_string();
    assert!(err.contains("comm_r"), "{err}");
    assert!(err.contains("StackedDrg32GiBV1_1"), "{err}");
    // Every interactive type (V1 and V1_1 at five sizes) and the
    // non-interactive ones up to 512 MiB (every node labelled); never the
    // synthetic-PoRep feature, whose C1 this cannot make.
    let names = supported_names();
    assert_eq!(names.len(), 13, "{names:?}");
    assert!(
        names.iter().all(|n| !n.contains("SyntheticPoRep")),
        "{names:?}"
    );
    let non_interactive: Vec<_> = names
        .iter()
        .filter(|n| n.contains("NonInteractivePoRep"))
        .collect();
    assert_eq!(non_interactive.len(), 3, "{names:?}");
    assert!(
        non_interactive
            .iter()
            .all(|n| ["2KiB", "8MiB", "512MiB"].iter().any(|s| n.contains(s))),
        "{names:?}"
    );
}

/// The plain C1 JSON with `edit` applied to partition 0's challenge 1.
fn edited(c1: &[u8], edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(c1).unwrap();
    let proofs = v["vanilla_proofs"]
        .as_object_mut()
        .unwrap()
        .values_mut()
        .next()
        .unwrap();
    edit(&mut proofs[0][1]);
    serde_json::to_vec(&v).unwrap()
}

/// Flips the low bit of the first byte of a 32-byte value (keeping it a field element).
fn flip(value: &mut serde_json::Value) {
    let byte = &mut value[0];
    *byte = (byte.as_u64().unwrap() ^ 1).into();
}

fn refused(c1: &[u8], want: &[&str]) {
    let c1 = parse_c1(c1).unwrap();
    let err = check_c1(&c1, None).unwrap_err().to_string();
    for w in want {
        assert!(err.contains(w), "{err:?} lacks {w:?}");
    }
}

#[test]
fn one_changed_value_is_refused_naming_partition_and_challenge() {
    let good = json(&request(v1_1("8MiB"), 11));
    let at = ["partition 0, challenge 1"];
    // A sibling in the data tree's path (the vanilla verification only checks its index).
    refused(
        &edited(&good, |p| {
            flip(&mut p["comm_d_proofs"]["data"]["Single"]["path"]["path"][3]["hashes"][0])
        }),
        &[at[0], "comm_d"],
    );
    // A sibling in the replica tree's path (likewise).
    refused(
        &edited(&good, |p| {
            flip(&mut p["comm_r_last_proof"]["data"]["Single"]["path"]["path"][2]["hashes"][5])
        }),
        &[at[0], "comm_r_last"],
    );
    // A label in the challenge's own column.
    refused(
        &edited(&good, |p| {
            flip(&mut p["replica_column_proofs"]["c_x"]["column"]["rows"][1])
        }),
        &[at[0], "own column"],
    );
    // A label in a parent's column.
    refused(
        &edited(&good, |p| {
            flip(&mut p["replica_column_proofs"]["exp_parents"][2]["column"]["rows"][0])
        }),
        &[at[0], "parent 8"],
    );
    // A labelling proof's copy of a parent (the circuit reads the columns instead).
    refused(
        &edited(&good, |p| flip(&mut p["labeling_proofs"][1]["parents"][0])),
        &["vanilla verification refuses"],
    );
}

mod post {
    //! Synthetic PoSt vanilla proofs at every size pass the crates' own
    //! checks of a PoSt's vanilla proofs (`partition_vanilla_proofs`,
    //! `single_partition_vanilla_proofs`: the challenges this randomness
    //! derives, each opening against comm_r_last, comm_r = H(comm_c,
    //! comm_r_last)), are reproducible, and fail them with one byte changed
    //! or under other randomness. Proving them is `post_2kib.rs`'s job.

    use cuzk_filecoin::synthetic_post::SyntheticPost;
    use cuzk_filecoin::{parse_sector_size, PostKind, PostRequest, PostType, SectorIdentity};

    const RANDOMNESS: [u8; 32] = {
        let mut r = [0x5a; 32];
        r[31] = 0x1f;
        r
    };

    fn post_type(kind: PostKind, size: &str) -> PostType {
        let bytes = parse_sector_size(size).unwrap();
        PostType::ALL
            .into_iter()
            .filter_map(|p| PostType::new(p).ok())
            .find(|p| p.kind() == kind && p.sector_size() == bytes)
            .unwrap()
    }

    fn synthetic(pt: PostType, sectors: Vec<u64>) -> SyntheticPost {
        SyntheticPost {
            post_type: pt,
            randomness: RANDOMNESS,
            prover_id: SectorIdentity::from_actor(1000, 0).prover_id,
            sectors,
            seed: 9,
        }
    }

    fn request(s: &SyntheticPost, vanilla: Vec<Vec<u8>>, randomness: &[u8]) -> PostRequest {
        match s.post_type.kind() {
            PostKind::Winning => {
                PostRequest::winning(s.post_type, randomness, s.prover_id, vanilla)
            }
            PostKind::Window => {
                PostRequest::window(s.post_type, randomness, s.prover_id, vanilla, 0)
            }
        }
        .unwrap()
    }

    #[test]
    fn winning_post_vanilla_proofs_of_every_size_pass_the_crates_checks() {
        for size in ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"] {
            let s = synthetic(post_type(PostKind::Winning, size), vec![77]);
            let made = s.generate().unwrap();
            assert_eq!(
                made.challenges,
                s.post_type.config().challenge_count,
                "{size}"
            );
            let r = request(&s, made.vanilla_proofs.clone(), &RANDOMNESS);
            r.check().unwrap_or_else(|e| panic!("{size}: {e}"));
            assert_eq!(r.sectors().unwrap(), vec![(77, made.comm_rs[0])]);
            assert_eq!(s.generate().unwrap().vanilla_proofs, made.vanilla_proofs);
            // Other randomness challenges other leaves.
            let mut other = RANDOMNESS;
            other[0] ^= 1;
            let e = request(&s, made.vanilla_proofs.clone(), &other)
                .check()
                .unwrap_err()
                .to_string();
            assert!(e.contains("do not prove the challenges"), "{size}: {e}");
            // One byte changed where the check must notice: in comm_c (the
            // second-to-last 32 bytes: comm_r is no longer its hash with
            // comm_r_last) and, for single-level trees, in the first
            // inclusion proof's first sibling hash. (The proof's own copy
            // of a path's root is not what the check compares, so an
            // arbitrary byte is not a test: the middle byte of the 2 KiB
            // proof is the first byte of a root, and stays accepted.)
            let bytes = &made.vanilla_proofs[0];
            // sector id, comm_r, sectors, inclusion proofs (u64 lengths),
            // ProofData's tag (u32): 0 is a single-level proof, then root,
            // leaf, the path's length, the first element's hash count.
            let single = bytes[56..60] == [0, 0, 0, 0];
            let sibling = 8 + 32 + 8 + 8 + 4 + 32 + 32 + 8 + 8;
            let comm_c = bytes.len() - 64;
            for at in [Some(comm_c), single.then_some(sibling + 5)]
                .into_iter()
                .flatten()
            {
                let mut edited = made.vanilla_proofs.clone();
                edited[0][at] ^= 1;
                let e = request(&s, edited, &RANDOMNESS).check().unwrap_err();
                eprintln!(
                    "{size}: {} bytes, {:?}; byte {at} edited: {e}",
                    bytes.len(),
                    made.elapsed
                );
            }
        }
    }

    #[test]
    fn a_short_window_post_partition_passes_and_counts_are_refused() {
        for size in ["2KiB", "8MiB"] {
            let pt = post_type(PostKind::Window, size);
            let sectors: Vec<u64> = (1..pt.sector_count() as u64).collect::<Vec<_>>();
            let sectors = if sectors.is_empty() { vec![1] } else { sectors };
            let s = synthetic(pt, sectors.clone());
            let made = s.generate().unwrap();
            assert_eq!(made.vanilla_proofs.len(), sectors.len());
            request(&s, made.vanilla_proofs, &RANDOMNESS)
                .check()
                .unwrap_or_else(|e| panic!("{size}: {e}"));
        }
        let winning = post_type(PostKind::Winning, "2KiB");
        let e = synthetic(winning, vec![1, 2])
            .generate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("exactly 1"), "{e}");
        let window = post_type(PostKind::Window, "2KiB");
        let e = synthetic(window, vec![3, 3])
            .generate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("sector 3 is listed twice"), "{e}");
    }
}

mod snap {
    //! Synthetic SnapDeals vanilla proofs at every size pass the crates'
    //! own vanilla verification (`EmptySectorUpdate::verify_all_partitions`,
    //! through `UpdateRequest::check`: the challenges comm_r_new derives,
    //! the three openings per challenge, both comm_r's, the encoding, the
    //! apex leaves), are reproducible, and fail it with one byte changed or
    //! with the commitments swapped. Proving them is the `cuzk` CLI test's job
    //! (`synth_snap_cli.rs`, at 2 KiB, with its key).

    use cuzk_filecoin::synthetic_snap::{SyntheticUpdate, SyntheticUpdateProofs};
    use cuzk_filecoin::{parse_sector_size, UpdateRequest, UpdateType};

    fn update_type(size: &str) -> UpdateType {
        let bytes = parse_sector_size(size).unwrap();
        UpdateType::ALL
            .into_iter()
            .map(UpdateType::new)
            .find(|u| u.sector_size() == bytes)
            .unwrap()
    }

    fn request(
        ut: UpdateType,
        made: &SyntheticUpdateProofs,
        vanilla: Vec<Vec<u8>>,
    ) -> UpdateRequest {
        UpdateRequest::new(
            ut,
            vanilla,
            &made.comm_r_old,
            &made.comm_r_new,
            &made.comm_d_new,
        )
        .unwrap()
    }

    #[test]
    fn update_vanilla_proofs_of_every_size_pass_the_crates_checks() {
        for size in ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"] {
            let ut = update_type(size);
            let s = SyntheticUpdate {
                update_type: ut,
                seed: 5,
            };
            let made = s.generate().unwrap();
            assert_eq!(made.vanilla_proofs.len(), ut.partitions(), "{size}");
            let per_partition = if ut.sector_size() <= 16 << 20 { 10 } else { 86 };
            assert_eq!(made.challenges, ut.partitions() * per_partition, "{size}");
            request(ut, &made, made.vanilla_proofs.clone())
                .check()
                .unwrap_or_else(|e| panic!("{size}: {e}"));
            // The commitments swapped: other challenges, another phi.
            let swapped = UpdateRequest::new(
                ut,
                made.vanilla_proofs.clone(),
                &made.comm_r_new,
                &made.comm_r_old,
                &made.comm_d_new,
            )
            .unwrap();
            let e = swapped.check().unwrap_err().to_string();
            assert!(e.contains("do not prove an update"), "{size}: {e}");
            // One byte changed in the middle of the last partition's proof.
            let mut edited = made.vanilla_proofs.clone();
            let last = edited.last_mut().unwrap();
            let at = last.len() / 2;
            last[at] ^= 1;
            let e = request(ut, &made, edited).check().unwrap_err();
            eprintln!(
                "{size}: {} partitions, {} blocks, {} bytes of vanilla proofs, {:?}; edited: {e}",
                made.vanilla_proofs.len(),
                made.blocks,
                made.vanilla_proofs.iter().map(Vec::len).sum::<usize>(),
                made.elapsed
            );
        }
    }

    /// The update's own partition counts (storage-proofs-update's), not the PoRep's.
    #[test]
    fn update_partition_counts_are_the_update_circuits() {
        for (size, partitions) in [
            ("2KiB", 1),
            ("8MiB", 4),
            ("512MiB", 16),
            ("32GiB", 16),
            ("64GiB", 16),
        ] {
            assert_eq!(update_type(size).partitions(), partitions, "{size}");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes() {
        let ut = update_type("2KiB");
        let make = |seed| {
            SyntheticUpdate {
                update_type: ut,
                seed,
            }
            .generate()
            .unwrap()
        };
        let (a, b, c) = (make(3), make(3), make(4));
        assert_eq!(a.vanilla_proofs, b.vanilla_proofs);
        assert_eq!(
            (a.comm_r_old, a.comm_r_new, a.comm_d_new),
            (b.comm_r_old, b.comm_r_new, b.comm_d_new)
        );
        assert_ne!(a.vanilla_proofs, c.vanilla_proofs);
        assert_ne!(a.comm_d_new, c.comm_d_new);
    }
}
