//! What the synthesis tests share: two `Synthesized` compared field by
//! field, so that a difference names the vector and the first index.

use cuzk_synth::Synthesized;

/// `actual` is `expected`: the same shape, every vector of the same length
/// and equal (else the first index that differs is named), the same
/// densities.
pub(crate) fn assert_same(actual: &Synthesized, expected: &Synthesized) {
    assert_eq!(actual.shape(), expected.shape());
    for (name, x, y) in [
        ("a", &actual.a, &expected.a),
        ("b", &actual.b, &expected.b),
        ("c", &actual.c, &expected.c),
        (
            "inputs",
            &actual.input_assignment,
            &expected.input_assignment,
        ),
        ("aux", &actual.aux_assignment, &expected.aux_assignment),
    ] {
        assert_eq!(x.len(), y.len(), "{name} length");
        if let Some(i) = (0..x.len()).find(|&i| x[i] != y[i]) {
            panic!("{name}[{i}] differs: {:?} != {:?}", x[i], y[i]);
        }
    }
    assert_eq!(actual.a_aux_density, expected.a_aux_density, "a_aux");
    assert_eq!(actual.b_input_density, expected.b_input_density, "b_input");
    assert_eq!(actual.b_aux_density, expected.b_aux_density, "b_aux");
    assert!(actual == expected);
}
