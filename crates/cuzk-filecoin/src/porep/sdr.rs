//! The two SDR functions a C1's consistency rests on, in plain code: the
//! labelling function and Filecoin's reduction of a hash to a field element.
//! The synthetic-sector generator labels challenged nodes with them, and the
//! C1 check recomputes every challenged label from the parent columns the
//! circuit will read, as the circuit does.

use filecoin_hashers::Domain;
use sha2::{Digest, Sha256};

/// SDR's labelling function: SHA-256 of (replica id, layer as a big-endian
/// u32, node as a big-endian u64, zero padding to 64 bytes, the parents'
/// labels), reduced to a field element by [`field_bytes`].
pub(crate) fn create_label<D: Domain>(
    replica_id: &D,
    layer: usize,
    node: usize,
    parent_labels: &[D],
) -> D {
    let mut prefix = [0u8; 64];
    prefix[..32].copy_from_slice(&replica_id.into_bytes());
    prefix[32..36].copy_from_slice(&(layer as u32).to_be_bytes());
    prefix[36..44].copy_from_slice(&(node as u64).to_be_bytes());
    let mut hasher = Sha256::new();
    hasher.update(prefix);
    for p in parent_labels {
        hasher.update(p.into_bytes());
    }
    field_bytes(hasher.finalize().into())
}

/// 32 bytes as a field element the way Filecoin truncates hashes: the top
/// two bits cleared, which leaves a value below 2^254, hence below the
/// BLS12-381 scalar modulus.
pub(crate) fn field_bytes<D: Domain>(mut bytes: [u8; 32]) -> D {
    bytes[31] &= 0x3f;
    D::try_from_bytes(&bytes).expect("below 2^254, so a canonical field element")
}
