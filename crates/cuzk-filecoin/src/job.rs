//! What every proof kind's engine source shares: one partition's synthesis
//! as a boxed closure, and the circuit shape a proving key implies.

use bellperson::SynthesisError;
use cuzk_groth16::ProvingKey;
use cuzk_synth::{CircuitShape, Synthesized};

/// One partition's synthesis, its circuit inside; given the shape to
/// reserve room for.
pub(crate) type Synthesis =
    Box<dyn FnOnce(&CircuitShape) -> Result<Synthesized, SynthesisError> + Send>;

/// The shape a key proves: the domain from H, the inputs from the
/// verifying key, the densities from A and B.
pub(crate) fn shape_from_key(key: &ProvingKey) -> CircuitShape {
    let num_inputs = key.vk.ic.len();
    let domain = (key.h.len() + 1).next_power_of_two();
    // The one B input is ONE; a key that disagrees fails the submission check.
    let b_input_density = 1;
    CircuitShape {
        num_constraints: domain,
        num_inputs,
        num_aux: key.l.len(),
        a_aux_density: key.a.len().saturating_sub(num_inputs),
        b_input_density,
        b_aux_density: key.b_g1.len().saturating_sub(b_input_density),
        domain_log2: domain.trailing_zeros(),
    }
}
