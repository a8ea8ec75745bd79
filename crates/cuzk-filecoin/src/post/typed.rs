//! A request decoded for one tree shape: the crates' parameters, the
//! public inputs of their prover and verifier, and the circuit.

use super::*;

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// A request decoded for one tree shape, with the crates' parameters and
/// the public inputs of their prover and of their verifier.
struct Typed<Tree: 'static + MerkleTreeTrait> {
    config: PoStConfig,
    params: compound_proof::PublicParams<'static, FallbackPoSt<'static, Tree>>,
    proofs: Vec<FallbackPoStSectorProof<Tree>>,
    prover_inputs: fallback::PublicInputs<Domain<Tree>>,
    verifier_inputs: fallback::PublicInputs<Domain<Tree>>,
}

fn decode<Tree: 'static + MerkleTreeTrait>(
    request: &PostRequest,
) -> Result<Vec<FallbackPoStSectorProof<Tree>>, Error> {
    let pt = request.post_type;
    let config = pt.config();
    let challenges = config.challenge_count;
    let mut seen = std::collections::BTreeSet::new();
    request
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let proof: FallbackPoStSectorProof<Tree> =
                bincode::deserialize(bytes).map_err(|e| {
                    request.refuse(format!(
                        "vanilla proof {i} is not a bincode FallbackPoStSectorProof of a {} sector: {e}",
                        sector_size_label(pt.sector_size())
                    ))
                })?;
            let used = bincode::serialized_size(&proof).unwrap_or(u64::MAX);
            if used != bytes.len() as u64 {
                return Err(request.refuse(format!(
                    "vanilla proof {i} has {} bytes after its FallbackPoStSectorProof of {used} bytes",
                    bytes.len() as u64 - used.min(bytes.len() as u64)
                )));
            }
            let id = u64::from(proof.sector_id);
            if !seen.insert(id) {
                return Err(request.refuse(format!(
                    "vanilla proof {i} is for sector {id}, which an earlier one already proves"
                )));
            }
            let sectors = &proof.vanilla_proof.sectors;
            let inclusions = sectors.first().map_or(0, |s| s.inclusion_proofs.len());
            if sectors.len() != 1 || inclusions != challenges {
                return Err(request.refuse(format!(
                    "vanilla proof {i} (sector {id}) holds {} sector proof(s) with {inclusions} \
                     inclusion proof(s); a {} sector proof is one with {challenges}",
                    sectors.len(),
                    pt.name()
                )));
            }
            Ok(proof)
        })
        .collect()
}

fn typed<Tree: 'static + MerkleTreeTrait>(request: &PostRequest) -> Result<Typed<Tree>, Error> {
    let pt = request.post_type;
    let config = pt.config();
    let proofs = decode::<Tree>(request)?;
    let randomness: Domain<Tree> = as_safe_commitment(&request.randomness, "randomness")
        .map_err(|e| request.refuse(format!("{e:#}: the randomness is not a field element")))?;
    let prover_id: Domain<Tree> = as_safe_commitment(&request.prover_id, "prover_id")
        .map_err(|e| request.refuse(format!("{e:#}: the prover id is not a field element")))?;
    let (vanilla_params, k) = match pt.kind() {
        PostKind::Winning => (
            winning_post_setup_params(&config)
                .map_err(|e| Error::filecoin("setting up the WinningPoSt parameters", e))?,
            None,
        ),
        PostKind::Window => (
            window_post_setup_params(&config),
            Some(request.partition_index),
        ),
    };
    let verifier_copies = match pt.kind() {
        // verify_winning_post lists the sectors once per unrolled "sector".
        PostKind::Winning => vanilla_params.sector_count,
        PostKind::Window => 1,
    };
    let params = FallbackPoStCompound::<Tree>::setup(&compound_proof::SetupParams {
        vanilla_params,
        // One partition: a window request holds at most sector_count sectors.
        partitions: None,
        priority: config.priority,
    })
    .map_err(|e| Error::filecoin("setting up the PoSt parameters", e))?;
    let sectors: Vec<_> = proofs
        .iter()
        .map(|p| PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect();
    let prover_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: sectors.clone(),
        k,
    };
    let verifier_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: (0..verifier_copies)
            .flat_map(|_| sectors.iter().cloned())
            .collect(),
        k: None,
    };
    Ok(Typed {
        config,
        params,
        proofs,
        prover_inputs,
        verifier_inputs,
    })
}

/// The circuit of `request` as the crates build it, with what its native
/// witness reads, the verifier's public inputs and what building it cost.
struct Built<Tree: 'static + MerkleTreeTrait> {
    circuit: FallbackPoStCircuit<Tree>,
    prover_inputs: fallback::PublicInputs<Domain<Tree>>,
    partition: fallback::Proof<Tree::Proof>,
    inputs: Vec<Fr>,
    prep: PostPrep,
}

fn build<Tree: 'static + MerkleTreeTrait>(request: &PostRequest) -> Result<Built<Tree>, Error> {
    let mut prep = PostPrep::default();
    let clock = Instant::now();
    let t = typed::<Tree>(request)?;
    prep.decode = clock.elapsed();
    let clock = Instant::now();
    let vanilla_params = &t.params.vanilla_params;
    let refused = |e: String| {
        request.refuse(format!(
            "the vanilla proofs do not prove the challenges of this randomness and these sectors: {e}"
        ))
    };
    let partition = match request.post_type.kind() {
        PostKind::Winning => {
            partition_vanilla_proofs(&t.config, vanilla_params, &t.prover_inputs, 1, &t.proofs)
                .map_err(|e| refused(format!("{e:#}")))?
                .pop()
                .ok_or_else(|| Error::filecoin("partitioning the vanilla proofs", "no partition"))?
        }
        PostKind::Window => {
            single_partition_vanilla_proofs(&t.config, vanilla_params, &t.prover_inputs, &t.proofs)
                .map_err(|e| refused(format!("{e:#}")))?
        }
    };
    prep.vanilla_check = clock.elapsed();
    let clock = Instant::now();
    let circuit = <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::circuit(
        &t.prover_inputs,
        Default::default(),
        &partition,
        vanilla_params,
        Some(0),
    )
    .map_err(|e| Error::filecoin("building the PoSt circuit", e))?;
    let inputs = <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::generate_public_inputs(
        &t.verifier_inputs,
        vanilla_params,
        Some(0),
    )
    .map_err(|e| Error::filecoin("deriving the public inputs", e))?;
    prep.circuit = clock.elapsed();
    Ok(Built {
        circuit,
        prover_inputs: t.prover_inputs,
        partition,
        inputs,
        prep,
    })
}

/// The circuit of `request` as a synthesis, with the verifier's public
/// inputs and what building it cost. Pre-compiled, its native witness
/// takes its aux vector from `pool` when given ([`AuxPool`]).
pub(crate) fn erased_circuit<Tree: 'static + MerkleTreeTrait>(
    request: &PostRequest,
    synthesis: &CircuitSynthesis,
    pool: Option<Arc<AuxPool>>,
) -> Result<(Synthesis, Vec<Fr>, PostPrep), Error> {
    let mut built = build::<Tree>(request)?;
    let name = request.post_type.name();
    let synthesis = match synthesis {
        CircuitSynthesis::Full => {
            synthesis.synthesis(built.circuit, FallbackPoStCircuit::clone, name)
        }
        CircuitSynthesis::Precompiled(_) => {
            let clock = Instant::now();
            let native = NativePost::new::<Tree>(&built.prover_inputs, &built.partition)?;
            built.prep.circuit += clock.elapsed();
            synthesis.synthesis_with_native(
                built.circuit,
                move |shape: &CircuitShape| {
                    native.witness(shape.num_inputs, shape.num_aux, pool.as_deref())
                },
                name,
            )
        }
    };
    Ok((synthesis, built.inputs, built.prep))
}

pub(super) fn witness_typed<Tree: 'static + MerkleTreeTrait>(
    request: &PostRequest,
    source: WitnessSource,
    pool: Option<&AuxPool>,
    on_built: &mut dyn FnMut(&PostPrep),
) -> Result<(Witness, PostPrep), Error> {
    let built = build::<Tree>(request)?;
    on_built(&built.prep);
    let witness = match source {
        WitnessSource::Gadgets => cuzk_synth::precompiled::witness(built.circuit),
        WitnessSource::Native => {
            NativePost::new::<Tree>(&built.prover_inputs, &built.partition)?.witness(0, 0, pool)
        }
    };
    let witness = witness.map_err(|source| Error::Synthesis {
        partition: 0,
        source,
    })?;
    Ok((witness, built.prep))
}

pub(super) fn verify_compound_typed<Tree: 'static + MerkleTreeTrait>(
    request: &PostRequest,
    proof: &[u8],
    vk: &groth16::VerifyingKey<Bls12>,
) -> Result<bool, Error> {
    let t = typed::<Tree>(request)?;
    let pvk = groth16::prepare_verifying_key(vk);
    let multi = MultiProof::new_from_bytes(None, proof, &pvk)
        .map_err(|e| Error::filecoin("reading the proof", e))?;
    <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::verify(
        &t.params,
        &t.verifier_inputs,
        &multi,
        &ChallengeRequirements {
            minimum_challenge_count: t.config.challenge_count * t.config.sector_count,
        },
    )
    .map_err(|e| Error::filecoin("verifying the proof", e))
}

pub(super) fn sectors_typed<Tree: 'static + MerkleTreeTrait>(
    request: &PostRequest,
) -> Result<Vec<(u64, [u8; 32])>, Error> {
    Ok(decode::<Tree>(request)?
        .iter()
        .map(|p| {
            let mut comm_r = [0u8; 32];
            comm_r.copy_from_slice(AsRef::<[u8]>::as_ref(&p.comm_r));
            (u64::from(p.sector_id), comm_r)
        })
        .collect())
}
