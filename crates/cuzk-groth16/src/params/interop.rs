//! Conversions between cuzk's key types and bellperson's, for interop
//! tests and callers that still hold bellperson parameters.

use super::*;

use bellperson::groth16 as bp;

impl From<&bp::VerifyingKey<Bls12>> for VerifyingKey {
    fn from(vk: &bp::VerifyingKey<Bls12>) -> Self {
        VerifyingKey {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic.clone(),
        }
    }
}

impl From<&VerifyingKey> for bp::VerifyingKey<Bls12> {
    fn from(vk: &VerifyingKey) -> Self {
        bp::VerifyingKey {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic.clone(),
        }
    }
}

impl From<&bp::Parameters<Bls12>> for ProvingKey {
    fn from(p: &bp::Parameters<Bls12>) -> Self {
        ProvingKey {
            vk: (&p.vk).into(),
            h: p.h.to_vec(),
            l: p.l.to_vec(),
            a: p.a.to_vec(),
            b_g1: p.b_g1.to_vec(),
            b_g2: p.b_g2.to_vec(),
        }
    }
}

impl From<ProvingKey> for bp::Parameters<Bls12> {
    fn from(pk: ProvingKey) -> Self {
        bp::Parameters {
            vk: (&pk.vk).into(),
            h: Arc::new(pk.h),
            l: Arc::new(pk.l),
            a: Arc::new(pk.a),
            b_g1: Arc::new(pk.b_g1),
            b_g2: Arc::new(pk.b_g2),
        }
    }
}
