//! `cuzk verify`: proofs checked against a proving or verifying key and the
//! public inputs `cuzk prove` wrote.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_field::{Fr, PrimeField};
use cuzk_groth16::encoding::PointCheck;
use cuzk_groth16::proof::proofs_from_bytes;
use cuzk_groth16::verifier::{verify_proof, PreparedVerifyingKey};
use cuzk_groth16::ProvingKey;

#[derive(Args, Debug)]
pub(crate) struct VerifyArgs {
    /// Proving key (.params) or verifying key (.vk).
    #[arg(long, short)]
    key: PathBuf,
    /// Concatenated 192-byte proofs.
    #[arg(long, short)]
    proofs: PathBuf,
    /// Public inputs JSON written by `cuzk prove` (one array of hex scalars per proof).
    #[arg(long, short)]
    inputs: PathBuf,
}

pub(crate) fn run(args: VerifyArgs) -> Result<()> {
    if !verify_files(&args.key, &args.proofs, &args.inputs)? {
        bail!("verification failed");
    }
    Ok(())
}

/// Verifies every proof, printing one line each; true when all are valid.
pub(crate) fn verify_files(key: &Path, proofs: &Path, inputs: &Path) -> Result<bool> {
    let vk = match ProvingKey::read_from_path(key, PointCheck::OnCurve) {
        Ok(pk) => pk.vk,
        Err(pk_err) => cuzk_groth16::VerifyingKey::read_from_path(key).map_err(|vk_err| {
            anyhow::anyhow!(
                "{} is neither a proving key ({pk_err}) nor a verifying key ({vk_err})",
                key.display()
            )
        })?,
    };
    let bytes = std::fs::read(proofs).with_context(|| format!("reading {}", proofs.display()))?;
    let proofs_v =
        proofs_from_bytes(&bytes).with_context(|| format!("decoding {}", proofs.display()))?;
    let text =
        std::fs::read_to_string(inputs).with_context(|| format!("reading {}", inputs.display()))?;
    let json: Vec<Vec<String>> = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a JSON array of arrays of hex strings",
            inputs.display()
        )
    })?;
    if json.len() != proofs_v.len() {
        bail!(
            "{} has {} proofs but {} has inputs for {}",
            proofs.display(),
            proofs_v.len(),
            inputs.display(),
            json.len()
        );
    }
    let pvk = PreparedVerifyingKey::new(&vk);
    let mut all = true;
    for (i, (proof, inputs)) in proofs_v.iter().zip(&json).enumerate() {
        let scalars = inputs
            .iter()
            .map(|s| parse_scalar(s))
            .collect::<Result<Vec<_>>>()?;
        let ok = verify_proof(&pvk, proof, &scalars).with_context(|| format!("proof {i}"))?;
        println!("proof {i}: {}", if ok { "valid" } else { "INVALID" });
        all &= ok;
    }
    Ok(all)
}

/// 64 big-endian hex digits (optionally `0x`-prefixed) as a scalar.
fn parse_scalar(s: &str) -> Result<Fr> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    if s.len() != 64 {
        bail!(
            "a public input must be 64 hex digits (big-endian), got {} characters",
            s.len()
        );
    }
    let mut repr = [0u8; 32];
    for (i, byte) in repr.iter_mut().rev().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16)
            .with_context(|| format!("bad hex in public input {s:?}"))?;
    }
    Option::from(Fr::from_repr(repr))
        .with_context(|| format!("public input {s} is not below the field modulus"))
}
