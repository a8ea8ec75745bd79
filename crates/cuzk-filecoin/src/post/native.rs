//! A PoSt circuit's witness, generated natively: `FallbackPoStCircuit`'s
//! allocations replayed sector by sector on rayon, its Poseidon hashes and
//! inclusion paths computed by [`crate::poseidon`] (plain field arithmetic,
//! no linear combination), where the gadgets run witness-only spend about
//! 26 s on a 32 GiB WindowPoSt partition.
//!
//! What the circuit allocates (storage-proofs-post 19.1, `Sector::synthesize`),
//! per sector: comm_r_last, comm_c and comm_r; comm_r as a public input;
//! H(comm_c, comm_r_last), Poseidon of arity 2 (its equality with comm_r
//! is a constraint only); then per challenge `PoRCircuit::synthesize` with
//! the leaf allocated and the root comm_r_last's variable, private: the
//! path's levels, then its position bits packed into public inputs. On an
//! extensible system the crates synthesize groups of sectors apart and
//! join them in order with `ConstraintSystem::extend`, which gives the
//! sequential order: sector after sector.
//!
//! The sectors are those `FallbackPoStCompound::circuit` builds from the
//! partition's vanilla proofs (a short WindowPoSt partition's last public
//! sector repeated). `tests/post_2kib.rs` compares this witness with the
//! gadgets' value for value.
//!
//! Each sector writes straight into its run of the aux vector. A level
//! hash whose nodes an earlier challenge of the same sector already hashed
//! at that level (always the top level of a tree with sub-trees: its nodes
//! are the sub-tree roots; often the level below) repeats that hash's
//! values instead of computing them again: the gadgets allocate the same
//! values for the same nodes.

use std::ops::Range;

use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use cuzk_synth::native::bits::bit_value;
use cuzk_synth::precompiled::{AuxSink, Witness};
use ff::Field;
use filecoin_hashers::POSEIDON_CONSTANTS_2;
use rayon::prelude::*;

use super::pool::{zeroed, AuxPool};
use super::*;
use crate::poseidon::{hash, hash_nodes, inclusion_path_hashing, packed_inputs};

/// A Merkle path as `MerkleProofTrait::as_options` gives it.
type Path = Vec<(Vec<Option<Fr>>, Option<usize>)>;

/// What the native witness of one PoSt circuit reads.
#[derive(Clone, Debug)]
pub(crate) struct NativePost {
    sectors: Vec<NativeSector>,
}

/// One sector of the circuit (`storage_proofs_post::fallback::Sector`).
#[derive(Clone, Debug)]
struct NativeSector {
    comm_r: Fr,
    comm_c: Fr,
    comm_r_last: Fr,
    /// Per challenge: the leaf and its path in tree R.
    challenges: Vec<(Fr, Path)>,
}

impl NativePost {
    /// The sectors `FallbackPoStCompound::circuit(prover_inputs, …,
    /// partition, …, Some(0))` builds: the vanilla sector proofs in order,
    /// each with the public sector of its place, the last public sector
    /// standing in for the missing ones of a short partition.
    pub(crate) fn new<Tree: 'static + MerkleTreeTrait>(
        prover_inputs: &fallback::PublicInputs<<Tree::Hasher as Hasher>::Domain>,
        partition: &fallback::Proof<Tree::Proof>,
    ) -> Result<Self, Error> {
        let public = &prover_inputs.sectors;
        let last = public
            .last()
            .ok_or_else(|| Error::filecoin("building the native PoSt witness", "no sector"))?;
        let sectors = partition
            .sectors
            .iter()
            .enumerate()
            .map(|(i, proof)| NativeSector {
                comm_r: public.get(i).unwrap_or(last).comm_r.into(),
                comm_c: proof.comm_c.into(),
                comm_r_last: proof.comm_r_last.into(),
                challenges: proof
                    .leafs()
                    .into_iter()
                    .map(Into::into)
                    .zip(proof.as_options())
                    .collect(),
            })
            .collect();
        Ok(NativePost { sectors })
    }

    /// The circuit's witness (inputs with ONE first, aux), sectors on
    /// rayon, its vectors reserved for `inputs` and `aux` values (the
    /// recorded shape's counts); the aux vector taken from `pool` when it
    /// holds one large enough (written over in full), else fresh.
    pub(crate) fn witness(
        &self,
        inputs: usize,
        aux: usize,
        pool: Option<&AuxPool>,
    ) -> Result<Witness, SynthesisError> {
        let Some(first) = self.sectors.first() else {
            return Ok(Witness {
                input_assignment: vec![Fr::ONE],
                aux_assignment: Vec::new(),
            });
        };
        // Every sector has the first one's challenge count and tree shape,
        // so the same number of aux values: each writes its own run.
        let mut scratch = Vec::new();
        first.witness(&mut scratch)?;
        let per_sector = scratch.len();
        drop(scratch);
        // Every value of it is written below: each run in full, its length
        // checked (so a pooled vector's old values never show through).
        let len = per_sector * self.sectors.len();
        let mut aux_assignment = match pool {
            Some(pool) => pool.take(len, aux.max(len)),
            None => zeroed(len, aux.max(len)),
        };
        let sector_inputs = aux_assignment
            .par_chunks_mut(per_sector.max(1))
            .zip(self.sectors.par_iter())
            .map(|(out, sector)| {
                let mut run = Run { out, len: 0 };
                let inputs = sector.witness(&mut run)?;
                if run.len != per_sector {
                    // Sectors of unequal shape: not a circuit the crates build.
                    return Err(SynthesisError::Unsatisfiable);
                }
                Ok(inputs)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut input_assignment = Vec::with_capacity(inputs);
        input_assignment.push(Fr::ONE);
        input_assignment.extend(sector_inputs.into_iter().flatten());
        Ok(Witness {
            input_assignment,
            aux_assignment,
        })
    }
}

impl NativeSector {
    /// `Sector::synthesize`: pushes the sector's aux values onto `aux` and
    /// returns its public inputs.
    fn witness<S: Repeat>(&self, aux: &mut S) -> Result<Vec<Fr>, SynthesisError> {
        aux.push_values(&[self.comm_r_last, self.comm_c, self.comm_r]);
        let mut inputs = vec![self.comm_r];
        hash(&[self.comm_c, self.comm_r_last], &POSEIDON_CONSTANTS_2, aux);
        // The level hashes so far: level, nodes, where their values are.
        let mut hashed: Vec<(usize, Vec<Fr>, Range<usize>)> = Vec::new();
        for (leaf, path) in &self.challenges {
            aux.push_value(*leaf);
            let (_root, bits) = inclusion_path_hashing(*leaf, path, aux, |level, nodes, aux| {
                let start = aux.len();
                if let Some((_, _, done)) = hashed
                    .iter()
                    .find(|(l, n, _)| *l == level && n[..] == *nodes)
                {
                    aux.repeat(done.clone());
                    return aux.last();
                }
                let root = hash_nodes(nodes, aux);
                hashed.push((level, nodes.to_vec(), start..aux.len()));
                root
            })?;
            inputs.extend(packed_inputs(&bits));
        }
        Ok(inputs)
    }
}

/// A sink that can push again values it holds.
trait Repeat: AuxSink {
    /// Pushes the values at `range` (already pushed) again, in order.
    fn repeat(&mut self, range: Range<usize>);

    /// The last value pushed (zero if none).
    fn last(&self) -> Fr;
}

impl Repeat for Vec<Fr> {
    fn repeat(&mut self, range: Range<usize>) {
        self.extend_from_within(range);
    }

    fn last(&self) -> Fr {
        self.as_slice().last().copied().unwrap_or(Fr::ZERO)
    }
}

/// One sector's run of the aux vector, written from its start. Values past
/// its end are counted, not written: the caller checks the count.
struct Run<'a> {
    out: &'a mut [Fr],
    len: usize,
}

impl AuxSink for Run<'_> {
    fn len(&self) -> usize {
        self.len
    }

    fn push_bit(&mut self, bit: bool) {
        self.push_value(bit_value(bit));
    }

    fn push_value(&mut self, value: Fr) {
        if let Some(slot) = self.out.get_mut(self.len) {
            *slot = value;
        }
        self.len += 1;
    }

    fn push_values(&mut self, values: &[Fr]) {
        let end = self.len + values.len();
        if let Some(slots) = self.out.get_mut(self.len..end) {
            slots.copy_from_slice(values);
        }
        self.len = end;
    }
}

impl Repeat for Run<'_> {
    fn repeat(&mut self, range: Range<usize>) {
        let end = self.len + range.len();
        if range.end <= self.len && end <= self.out.len() {
            self.out.copy_within(range.clone(), self.len);
        }
        self.len = end;
    }

    fn last(&self) -> Fr {
        self.len
            .checked_sub(1)
            .and_then(|i| self.out.get(i))
            .copied()
            .unwrap_or(Fr::ZERO)
    }
}
