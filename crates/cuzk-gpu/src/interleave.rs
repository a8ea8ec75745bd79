//! The order in which a streamed key's chunks cross PCIe and are summed.
//!
//! H's MSM is compute-bound (2^27 full-width scalars) and L's, A's and B's
//! are copy-bound (98.7% of their scalars are 0 or 1: a chunk's sums take a
//! fraction of its copy). Run one after the other, the copy engine idles
//! through H and the SMs idle through L, A and B. Spreading the light
//! sections' chunks evenly between H's puts each light copy under an H
//! chunk's sums, and each light chunk's cheap sums under the next copies:
//! with a few chunk buffers in flight the partition's MSMs take about
//! max(copies, sums) instead of their sum (docs/small-cards.md).

/// One chunk of one section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Task {
    /// Index into the sections the order was made for.
    pub(crate) section: usize,
    /// The chunk within its section.
    pub(crate) chunk: usize,
}

/// The order of `chunks[i]` chunks of section i: section 0 (the heavy one)
/// in chunk order, with the chunks of the others (in section order, each in
/// chunk order) spread evenly between them: after the k-th heavy chunk, as
/// many as bring the light ones done to ⌈k · light / heavy⌉ (early rather
/// than late: the last light copies then cross under the last heavy
/// chunk's sums). A heavy chunk comes first, so the SMs start on the first
/// copy. With no heavy chunks, the light ones in order.
pub(crate) fn interleave(chunks: &[usize]) -> Vec<Task> {
    let Some((&heavy, light)) = chunks.split_first() else {
        return Vec::new();
    };
    let lights: Vec<Task> = light
        .iter()
        .enumerate()
        .flat_map(|(i, &n)| {
            (0..n).map(move |chunk| Task {
                section: i + 1,
                chunk,
            })
        })
        .collect();
    let mut order = Vec::with_capacity(heavy + lights.len());
    let mut next = 0;
    for k in 0..heavy {
        order.push(Task {
            section: 0,
            chunk: k,
        });
        let due = ((k + 1) * lights.len()).div_ceil(heavy);
        order.extend_from_slice(&lights[next..due]);
        next = due;
    }
    order.extend_from_slice(&lights[next..]);
    order
}

/// Sections one after the other, each in chunk order.
pub(crate) fn in_turn(chunks: &[usize]) -> Vec<Task> {
    chunks
        .iter()
        .enumerate()
        .flat_map(|(section, &n)| (0..n).map(move |chunk| Task { section, chunk }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every chunk exactly once, each section's in order.
    fn check_complete(order: &[Task], chunks: &[usize]) {
        assert_eq!(order.len(), chunks.iter().sum::<usize>());
        for (section, &n) in chunks.iter().enumerate() {
            let seen: Vec<usize> = order
                .iter()
                .filter(|t| t.section == section)
                .map(|t| t.chunk)
                .collect();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "section {section}");
        }
    }

    #[test]
    fn light_chunks_are_spread_evenly_between_heavy_ones() {
        // The 32 GiB partition under a 32 GiB budget, 2^23-point chunks: H
        // 16 chunks; L 16, A 16, B in G1 4, B in G2 (half-size chunks) 8.
        let chunks = [16, 16, 16, 4, 8];
        let order = interleave(&chunks);
        check_complete(&order, &chunks);
        assert_eq!(
            order[0],
            Task {
                section: 0,
                chunk: 0
            }
        );
        // 44 light chunks over 16 heavy: after the k-th heavy chunk's run,
        // ⌈k · 44 / 16⌉ light chunks done (runs of 2 or 3).
        let mut light_done = 0;
        let mut heavy_done = 0;
        for (i, t) in order.iter().enumerate() {
            if t.section == 0 {
                heavy_done += 1;
            } else {
                light_done += 1;
            }
            let run_ends = order.get(i + 1).is_none_or(|n| n.section == 0);
            if heavy_done > 0 && run_ends {
                assert_eq!(
                    light_done,
                    (heavy_done * 44usize).div_ceil(16),
                    "by heavy {heavy_done}"
                );
            }
        }
        assert_eq!(order.iter().rev().take_while(|t| t.section != 0).count(), 2);
        // The light sections keep their order: L's chunks before A's.
        let first_a = order.iter().position(|t| t.section == 2).unwrap();
        let last_l = order.iter().rposition(|t| t.section == 1).unwrap();
        assert!(last_l < first_a);
    }

    #[test]
    fn fewer_light_chunks_than_heavy_ones() {
        let chunks = [8, 3];
        let order = interleave(&chunks);
        check_complete(&order, &chunks);
        let heavy_before: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(_, t)| t.section == 1)
            .map(|(i, _)| order[..i].iter().filter(|t| t.section == 0).count())
            .collect();
        // Light chunk j is due once ⌈k · 3 / 8⌉ > j: after heavy chunks 1, 3 and 6.
        assert_eq!(heavy_before, vec![1, 3, 6]);
    }

    #[test]
    fn degenerate_orders() {
        assert!(interleave(&[]).is_empty());
        assert_eq!(interleave(&[0, 2]), in_turn(&[0, 2]));
        assert_eq!(interleave(&[3]), in_turn(&[3]));
        let chunks = [2, 0, 5, 0];
        check_complete(&interleave(&chunks), &chunks);
        check_complete(&in_turn(&chunks), &chunks);
        assert_eq!(
            in_turn(&[1, 2]),
            vec![
                Task {
                    section: 0,
                    chunk: 0
                },
                Task {
                    section: 1,
                    chunk: 0
                },
                Task {
                    section: 1,
                    chunk: 1
                },
            ]
        );
    }
}
