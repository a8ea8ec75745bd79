//! What the sweep's jobs prove: the demo circuit, or Filecoin PoRep C2 on
//! synthetic sectors (or given C1 files) with the sector's key from the
//! parameter cache, each proof then checked by filecoin-proofs'
//! `verify_seal`.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk_filecoin::synthetic::SyntheticSector;
use cuzk_filecoin::{
    parse_c1, parse_sector_size, verify, C1Input, ParamsDir, PorepSource, ProofType,
    SectorIdentity, Verified,
};
use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::setup::generate_key;
use cuzk_groth16::ProvingKey;
use cuzk_pipeline::{DemoSource, JobOutput, PartitionSource};
use cuzk_synth::{CircuitShape, DemoCircuit};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde_json::{json, Value};

use crate::options::{CircuitKind, Options};

/// One PoRep sector to prove.
pub(crate) struct Sector {
    c1: C1Input,
    identity: SectorIdentity,
    /// Where it came from (a file, or "synthetic sector N").
    origin: String,
}

/// The circuit, its key and the jobs' inputs.
pub(crate) enum Workload {
    Demo {
        log_size: u32,
        share: f64,
        partitions: usize,
        sequential: bool,
        key: Arc<ProvingKey>,
    },
    Porep {
        proof_type: ProofType,
        sectors: Vec<Sector>,
        key: Arc<ProvingKey>,
        vk: Box<bellperson::groth16::VerifyingKey<blstrs::Bls12>>,
        /// Whether the sectors were made here (test data) or read.
        synthetic: bool,
        key_file: u64,
    },
}

impl Workload {
    /// Loads (or makes) the key and the jobs' inputs.
    pub(crate) fn load(o: &Options) -> Result<Workload> {
        match o.circuit {
            CircuitKind::Demo => Ok(Workload::Demo {
                log_size: o.log_size,
                share: o.share,
                partitions: o.partitions as usize,
                sequential: o.sequential_synthesis,
                key: Arc::new(demo_key(o)?),
            }),
            CircuitKind::Porep => porep(o),
        }
    }

    /// The largest partition's shape.
    pub(crate) fn shape(&self) -> Result<CircuitShape> {
        Ok(match self {
            Workload::Demo {
                log_size, share, ..
            } => DemoCircuit::shape_for(*log_size, *share),
            Workload::Porep { sectors, key, .. } => PorepSource::new(&sectors[0].c1, key)?.shape(),
        })
    }

    /// The proving key every job shares.
    pub(crate) fn key(&self) -> &Arc<ProvingKey> {
        match self {
            Workload::Demo { key, .. } | Workload::Porep { key, .. } => key,
        }
    }

    /// Host memory the key holds while the engine runs (what `auto` leaves out).
    pub(crate) fn key_bytes(&self) -> u64 {
        match self {
            Workload::Demo { .. } => 0,
            Workload::Porep { key_file, .. } => *key_file,
        }
    }

    /// Partitions per job.
    pub(crate) fn partitions(&self) -> usize {
        match self {
            Workload::Demo { partitions, .. } => *partitions,
            Workload::Porep { proof_type, .. } => proof_type.partitions(),
        }
    }

    /// Job `job`'s source (`seed` varies the demo circuit's witness).
    pub(crate) fn source(&self, job: usize, seed: u64) -> Result<Arc<dyn PartitionSource>> {
        Ok(match self {
            Workload::Demo {
                log_size,
                share,
                partitions,
                sequential,
                ..
            } => {
                let source = DemoSource::new(*log_size, *share, seed, *partitions);
                if *sequential {
                    Arc::new(source.in_sequence())
                } else {
                    Arc::new(source)
                }
            }
            Workload::Porep { sectors, key, .. } => {
                let s = &sectors[job % sectors.len()];
                Arc::new(PorepSource::new(&s.c1, key)?)
            }
        })
    }

    /// Checks job `job`'s proof beyond the engine's per-partition check:
    /// for PoRep, filecoin-proofs' `verify_seal` on the whole proof.
    pub(crate) fn check(&self, job: usize, out: &JobOutput) -> Result<()> {
        let Workload::Porep { sectors, vk, .. } = self else {
            return Ok(());
        };
        let s = &sectors[job % sectors.len()];
        let proof: Vec<u8> = out.proofs.iter().flat_map(|p| p.to_bytes()).collect();
        match verify(&s.c1, &proof, vk, Some(&s.identity))
            .with_context(|| format!("verify_seal of {}", s.origin))?
        {
            Verified::VerifySeal => Ok(()),
            other => bail!("{}: checked as {other:?}, not by verify_seal", s.origin),
        }
    }

    /// "demo 2^14 (share 0.95)" or "PoRep StackedDrg32GiBV1_1, synthetic CC sectors".
    pub(crate) fn describe(&self) -> String {
        match self {
            Workload::Demo {
                log_size, share, ..
            } => format!("demo 2^{log_size} (share {share})"),
            Workload::Porep {
                proof_type,
                synthetic,
                ..
            } => format!(
                "PoRep {}, {}",
                proof_type.name(),
                if *synthetic {
                    "synthetic CC sectors (test data; the proofs are real)"
                } else {
                    "C1 files"
                }
            ),
        }
    }

    /// A short name for the default results folder.
    pub(crate) fn slug(&self) -> String {
        match self {
            Workload::Demo { log_size, .. } => format!("k{log_size}"),
            Workload::Porep { proof_type, .. } => {
                format!("porep-{}", proof_type.sector_size_label())
            }
        }
    }

    /// The circuit's part of the JSON report.
    pub(crate) fn json(&self, shape: &CircuitShape) -> Value {
        let counts = json!({
            "constraints": shape.num_constraints,
            "inputs": shape.num_inputs,
            "aux": shape.num_aux,
            "domain_log2": shape.domain_log2,
        });
        let mut v = match self {
            Workload::Demo {
                log_size,
                share,
                sequential,
                ..
            } => json!({
                "kind": "demo",
                "log_size": log_size,
                "sha_share": share,
                "synthesis": if *sequential { "sequential" } else { "parallel lanes" },
            }),
            Workload::Porep {
                proof_type,
                sectors,
                synthetic,
                ..
            } => json!({
                "kind": "porep",
                "proof_type": proof_type.name(),
                "partitions": proof_type.partitions(),
                "synthetic_sectors": synthetic,
                "sectors": sectors.iter().map(|s| s.origin.clone()).collect::<Vec<_>>(),
            }),
        };
        if let (Some(m), Value::Object(c)) = (v.as_object_mut(), counts) {
            m.extend(c);
        }
        v
    }
}

fn porep(o: &Options) -> Result<Workload> {
    if let Some(dir) = &o.params_dir {
        // verify_seal reads the verifying key from the cache itself.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    let params = ParamsDir::filecoin();
    let actor = parse_actor(&o.prover_id)?;
    let mut sectors = Vec::new();
    let synthetic = o.c1.is_empty();
    if synthetic {
        let size = parse_sector_size(&o.sector_size)
            .with_context(|| format!("--sector-size {:?} is not a size", o.sector_size))?;
        let proof_type = ProofType::for_sector_size(size)?;
        for j in 0..o.jobs {
            let identity = SectorIdentity::from_actor(actor, j + 1);
            let made = SyntheticSector {
                proof_type,
                identity,
                seed: j + 1,
            }
            .generate()?;
            eprintln!(
                "synthetic CC sector {} of f0{actor} ({}): made in {:.2} s (test data)",
                j + 1,
                proof_type.name(),
                made.elapsed.as_secs_f64()
            );
            sectors.push(Sector {
                c1: C1Input {
                    output: made.output,
                    proof_type,
                    curio: None,
                },
                identity,
                origin: format!("synthetic sector {} (seed {})", j + 1, j + 1),
            });
        }
    } else {
        for path in &o.c1 {
            sectors.push(read_sector(path, actor)?);
        }
    }
    let proof_type = sectors[0].c1.proof_type;
    if let Some(s) = sectors.iter().find(|s| s.c1.proof_type != proof_type) {
        bail!(
            "{} is {}, the first sector {}: one proof type per sweep",
            s.origin,
            s.c1.proof_type.name(),
            proof_type.name()
        );
    }
    for s in &sectors {
        cuzk_filecoin::check_c1(&s.c1, Some(&s.identity))
            .with_context(|| format!("checking {}", s.origin))?;
    }
    let path = params.params_path(proof_type)?;
    let t = Instant::now();
    let key = params.load_proving_key(proof_type)?;
    let key_file = key.summary().file_len;
    eprintln!(
        "key {} read in {:.1} s",
        path.display(),
        t.elapsed().as_secs_f64()
    );
    let vk = Box::new(params.load_verifying_key(proof_type)?);
    Ok(Workload::Porep {
        proof_type,
        sectors,
        key: Arc::new(key),
        vk,
        synthetic,
        key_file,
    })
}

fn read_sector(path: &Path, actor: u64) -> Result<Sector> {
    let bytes =
        std::fs::read(path).with_context(|| format!("reading the C1 file {}", path.display()))?;
    let c1 = parse_c1(&bytes).with_context(|| format!("{}", path.display()))?;
    let Some(sector) = c1.sector_num() else {
        bail!(
            "{}: a plain C1 does not say its sector number; give Curio's wrapper",
            path.display()
        );
    };
    Ok(Sector {
        c1,
        identity: SectorIdentity::from_actor(actor, sector),
        origin: path.display().to_string(),
    })
}

fn parse_actor(text: &str) -> Result<u64> {
    cuzk_filecoin::parse_actor_id(text)
        .with_context(|| format!("--prover-id {text:?} is not an actor id (like f01000 or 1000)"))
}

fn demo_key(o: &Options) -> Result<ProvingKey> {
    let path = o.key.clone().unwrap_or_else(|| {
        crate::workspace_root().join(format!(
            "target/bench-keys/demo-{}-{}.params",
            o.log_size,
            (o.share * 100.0) as u32
        ))
    });
    if let Ok(key) = ProvingKey::read_from_path(&path, PointCheck::OnCurve) {
        return Ok(key);
    }
    if o.key.is_some() {
        bail!("cannot read the key {}", path.display());
    }
    eprintln!(
        "generating the 2^{} demo key with bellperson's generator (cached at {})",
        o.log_size,
        path.display()
    );
    let t = Instant::now();
    let key = generate_key(
        DemoCircuit::new(o.log_size, o.share, 0),
        &mut ChaCha20Rng::seed_from_u64(u64::from(o.log_size)),
    )?;
    eprintln!("  {:.1} s", t.elapsed().as_secs_f64());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    key.write_to_path(&path)?;
    Ok(key)
}
