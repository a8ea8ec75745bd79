//! The QAP at τ from a recorded circuit (cuzk-synth's `precompiled`
//! matrices) instead of a synthesis: A_i(τ) is column i of Aᵀ·L(τ), where
//! L(τ) holds the domain's Lagrange coefficients, one per constraint; B and
//! C alike.
//!
//! The recording is CSR (one row per constraint, the appended
//! `input_i * 0 = 0` rows included) over `z = (inputs, aux)`, so the
//! transposed product scatters each row's terms into its columns. To do
//! that on every core with memory bounded by the output, each matrix is
//! taken in groups of column buckets ([`BUCKET`] columns each): every task
//! owns a run of rows and deals the group's terms of its rows, as compact
//! [`Entry`]s, into its own slots of one shared array (bucket-major, so each
//! bucket's entries end up contiguous); then every bucket's sums are formed
//! by one task. A group holds at most `group_terms` entries (the last
//! bucket's excepted), so the scratch stays near [`GROUP_TERMS`] · 12 bytes
//! however large the circuit; a circuit with more terms takes several
//! passes over the matrix, each skipping the terms of other groups. Field
//! addition is exact, so the sums equal any other order's, bellperson's
//! per-variable loop included.

use std::ops::Range;

use blstrs::Scalar as Fr;
use cuzk_synth::precompiled::{CoeffIdsRef, MatrixRef, R1csRef, ID_MINUS_ONE, ID_ONE};
use ff::Field;
use rayon::prelude::*;

use super::Evaluated;

/// Columns per bucket: 16 Ki sums (512 KiB) that one task owns, so the
/// additions stay in cache (as `assembly`'s buckets).
const BUCKET: usize = 1 << 14;

/// Entries per pass over a matrix: 2^26 · 12 bytes = 768 MiB of scratch, a
/// few percent of the evaluation vectors of a circuit large enough to need
/// more than one pass (a 2^27-constraint one has ~12 GiB of them).
const GROUP_TERMS: usize = 1 << 26;

/// Rows per dealing task, at least: enough terms to amortise a task's
/// per-bucket counters.
const MIN_ROWS_PER_TASK: usize = 1 << 14;

/// One term, dealt to its column's bucket: 12 bytes instead of a 32-byte
/// product, multiplied by its row's Lagrange coefficient only when summed.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    row: u32,
    /// Column less the bucket's first.
    col: u32,
    id: u32,
}

/// Checks that `r1cs` is a well-formed recording: three matrices of the
/// shape's constraint count, offsets that fit their terms, columns below
/// the variable count and coefficient ids inside the table. A recording
/// from `record` or `MappedR1cs::open` always is; an `R1csRef` can also be
/// assembled by hand. The message names the matrix and what is wrong.
pub(super) fn check(r1cs: &R1csRef<'_>) -> Result<(), String> {
    let vars = r1cs.shape.num_inputs + r1cs.shape.num_aux;
    let rows = r1cs.shape.num_constraints;
    for (name, m) in [('A', &r1cs.a), ('B', &r1cs.b), ('C', &r1cs.c)] {
        if m.rows() != rows || m.row_ptr.is_empty() {
            return Err(format!(
                "matrix {name} has {} rows but the shape says {rows} constraints",
                m.rows()
            ));
        }
        let terms = m.cols.len();
        if m.ids.len() != terms {
            return Err(format!(
                "matrix {name} has {terms} columns but {} coefficient ids",
                m.ids.len()
            ));
        }
        let ordered = m.row_ptr.par_windows(2).all(|w| w[0] <= w[1]);
        if m.row_ptr[0] != 0 || m.row_ptr[rows] as usize != terms || !ordered {
            return Err(format!(
                "matrix {name}: the row offsets do not run from 0 to its {terms} terms in order"
            ));
        }
        if let Some(col) = m.cols.par_iter().find_any(|&&c| c as usize >= vars) {
            return Err(format!(
                "matrix {name} has column {col}, past the circuit's {vars} variables"
            ));
        }
        let table = r1cs.coeffs.len();
        let bad_id = match m.ids {
            CoeffIdsRef::U16(ids) => ids
                .par_iter()
                .map(|&id| u32::from(id))
                .find_any(|&id| id as usize >= table),
            CoeffIdsRef::U32(ids) => ids.par_iter().copied().find_any(|&id| id as usize >= table),
        };
        if let Some(id) = bad_id {
            return Err(format!(
                "matrix {name} has coefficient id {id}, past the table's {table} values"
            ));
        }
    }
    let c = r1cs.coeffs;
    if c.len() < 2 || c[ID_ONE as usize] != Fr::ONE || c[ID_MINUS_ONE as usize] != -Fr::ONE {
        return Err("the coefficient table does not start with 1, -1".into());
    }
    Ok(())
}

/// A_i(τ), B_i(τ), C_i(τ) for every variable of a recording that passed
/// [`check`], given `lagrange[j] = L_j(τ)` (at least one per constraint).
pub(super) fn evaluate(r1cs: &R1csRef<'_>, lagrange: &[Fr]) -> Evaluated {
    assert!(
        lagrange.len() >= r1cs.shape.num_constraints,
        "{} Lagrange coefficients for {} constraints",
        lagrange.len(),
        r1cs.shape.num_constraints
    );
    let vars = r1cs.shape.num_inputs + r1cs.shape.num_aux;
    let product =
        |m: &MatrixRef<'_>| transposed_product(m, r1cs.coeffs, lagrange, vars, GROUP_TERMS);
    Evaluated {
        num_inputs: r1cs.shape.num_inputs,
        at: product(&r1cs.a),
        bt: product(&r1cs.b),
        ct: product(&r1cs.c),
    }
}

/// Calls `f(row, column, id)` for every term of `rows`, in order.
fn for_each_term(m: &MatrixRef<'_>, rows: Range<usize>, f: impl FnMut(u32, u32, u32)) {
    match m.ids {
        CoeffIdsRef::U16(ids) => for_each_term_with(m.row_ptr, m.cols, ids, rows, f),
        CoeffIdsRef::U32(ids) => for_each_term_with(m.row_ptr, m.cols, ids, rows, f),
    }
}

fn for_each_term_with<I: Copy + Into<u32>>(
    row_ptr: &[u32],
    cols: &[u32],
    ids: &[I],
    rows: Range<usize>,
    mut f: impl FnMut(u32, u32, u32),
) {
    for r in rows {
        for k in row_ptr[r] as usize..row_ptr[r + 1] as usize {
            f(r as u32, cols[k], ids[k].into());
        }
    }
}

/// `mᵀ · lagrange`, `vars` long: Σ coeff · L_row over each column's terms.
/// See the module documentation for the passes; `group_terms` bounds one
/// pass's entries.
fn transposed_product(
    m: &MatrixRef<'_>,
    coeffs: &[Fr],
    lagrange: &[Fr],
    vars: usize,
    group_terms: usize,
) -> Vec<Fr> {
    let rows = m.rows();
    let per_task = rows
        .div_ceil(4 * rayon::current_num_threads())
        .max(MIN_ROWS_PER_TASK);
    let tasks: Vec<Range<usize>> = (0..rows)
        .step_by(per_task)
        .map(|start| start..(start + per_task).min(rows))
        .collect();
    let buckets = vars.div_ceil(BUCKET);
    // counts[task][bucket]: the task's terms in the bucket (a matrix has
    // fewer than 2^32 terms, so a u32 holds any count).
    let counts: Vec<Vec<u32>> = tasks
        .par_iter()
        .map(|rows| {
            let mut counts = vec![0u32; buckets];
            for_each_term(m, rows.clone(), |_, col, _| {
                counts[col as usize / BUCKET] += 1;
            });
            counts
        })
        .collect();
    let totals: Vec<usize> = (0..buckets)
        .map(|b| counts.iter().map(|c| c[b] as usize).sum())
        .collect();

    let mut out = vec![Fr::ZERO; vars];
    let mut first = 0;
    while first < buckets {
        // The group: buckets first..last, at least one, at most
        // `group_terms` entries unless its one bucket has more.
        let mut last = first + 1;
        let mut len = totals[first];
        while last < buckets && len + totals[last] <= group_terms {
            len += totals[last];
            last += 1;
        }
        let group = first..last;
        let mut entries = vec![Entry::default(); len];
        deal(m, &tasks, &counts, group.clone(), &mut entries);
        let mut rest = &entries[..];
        let per_bucket: Vec<&[Entry]> = totals[group.clone()]
            .iter()
            .map(|&n| {
                let (bucket, tail) = rest.split_at(n);
                rest = tail;
                bucket
            })
            .collect();
        let columns = first * BUCKET..(last * BUCKET).min(vars);
        out[columns]
            .par_chunks_mut(BUCKET)
            .zip(per_bucket)
            .for_each(|(sums, entries)| {
                for e in entries {
                    let l = lagrange[e.row as usize];
                    let sum = &mut sums[e.col as usize];
                    match e.id {
                        ID_ONE => *sum += l,
                        ID_MINUS_ONE => *sum -= l,
                        id => *sum += coeffs[id as usize] * l,
                    }
                }
            });
        first = last;
    }
    out
}

/// Writes the terms of `group`'s buckets into `entries`: bucket-major, and
/// within a bucket task by task, each task into its own slots (sized by
/// `counts`), so the tasks run in parallel without sharing a slot.
fn deal(
    m: &MatrixRef<'_>,
    tasks: &[Range<usize>],
    counts: &[Vec<u32>],
    group: Range<usize>,
    entries: &mut [Entry],
) {
    let mut slots: Vec<Vec<&mut [Entry]>> = tasks.iter().map(|_| Vec::new()).collect();
    let mut rest = entries;
    for b in group.clone() {
        for (task, counts) in slots.iter_mut().zip(counts) {
            let (slot, tail) = std::mem::take(&mut rest).split_at_mut(counts[b] as usize);
            task.push(slot);
            rest = tail;
        }
    }
    tasks.par_iter().zip(slots).for_each(|(rows, mut slots)| {
        let mut filled = vec![0usize; group.len()];
        for_each_term(m, rows.clone(), |row, col, id| {
            let bucket = col as usize / BUCKET;
            if group.contains(&bucket) {
                let i = bucket - group.start;
                slots[i][filled[i]] = Entry {
                    row,
                    col: col % BUCKET as u32,
                    id,
                };
                filled[i] += 1;
            }
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// A random CSR matrix over `vars` columns: mostly ±1, some table
    /// coefficients, a dense ONE column, empty rows and columns never used.
    fn random_matrix(
        rng: &mut impl Rng,
        rows: usize,
        vars: usize,
        table: usize,
    ) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        let (mut row_ptr, mut cols, mut ids) = (vec![0u32], Vec::new(), Vec::new());
        for r in 0..rows {
            let terms = if r % 13 == 0 { 0 } else { rng.gen_range(1..5) };
            for t in 0..terms {
                let col = match t {
                    0 if r % 3 == 0 => 0,
                    // Leaves the second bucket empty.
                    _ if r % 5 == 0 => rng.gen_range(2 * BUCKET..vars),
                    _ => rng.gen_range(0..BUCKET.min(vars)),
                };
                cols.push(col as u32);
                ids.push(match rng.gen_range(0..4) {
                    0 => ID_ONE,
                    1 => ID_MINUS_ONE,
                    _ => rng.gen_range(0..table as u32),
                });
            }
            row_ptr.push(cols.len() as u32);
        }
        (row_ptr, cols, ids)
    }

    /// The plain loop the passes replace.
    fn reference(m: &MatrixRef<'_>, coeffs: &[Fr], lagrange: &[Fr], vars: usize) -> Vec<Fr> {
        let mut out = vec![Fr::ZERO; vars];
        for_each_term(m, 0..m.rows(), |row, col, id| {
            out[col as usize] += coeffs[id as usize] * lagrange[row as usize];
        });
        out
    }

    /// Several buckets (one empty), one pass or many (a group per bucket,
    /// and groups of a few), u16 and u32 ids: all equal the plain loop.
    #[test]
    fn transposed_product_matches_a_plain_loop() {
        let mut rng = cuzk_testkit::test_rng("transposed_product_matches_a_plain_loop");
        let (rows, vars, table) = (50_000, 3 * BUCKET + 77, 300);
        let coeffs: Vec<Fr> = [Fr::ONE, -Fr::ONE]
            .into_iter()
            .chain((2..table).map(|_| Fr::random(&mut rng)))
            .collect();
        let lagrange: Vec<Fr> = (0..rows).map(|_| Fr::random(&mut rng)).collect();
        let (row_ptr, cols, ids) = random_matrix(&mut rng, rows, vars, table);
        let ids16: Vec<u16> = ids.iter().map(|&id| id as u16).collect();
        for ids in [CoeffIdsRef::U32(&ids), CoeffIdsRef::U16(&ids16)] {
            let m = MatrixRef {
                row_ptr: &row_ptr,
                cols: &cols,
                ids,
            };
            let want = reference(&m, &coeffs, &lagrange, vars);
            for group_terms in [GROUP_TERMS, cols.len() / 3, 1] {
                let got = transposed_product(&m, &coeffs, &lagrange, vars, group_terms);
                assert!(
                    got == want,
                    "group of {group_terms} terms, {} ids",
                    ids.width()
                );
            }
        }
    }
}
