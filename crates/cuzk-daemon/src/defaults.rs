//! Settings from the box: what a key left at 0 (`auto`) in the
//! configuration becomes, from the memory this process may use
//! (cgroup-aware, [`crate::resources`]) and its cores. The same rules fill
//! `cuzk doctor`'s report and the budget table of `docs/operators.md`.
//!
//! * `proving.engine_memory_budget`: 3/4 of the memory, shared by the HOT
//!   keys and the partitions in flight.
//! * `srs.host_budget`: 1/2 of the memory for HOT keys, so a 32 GiB
//!   WindowPoSt key (60.8 GB) is HOT on a 128 GiB box beside a partition,
//!   and partitions always keep at least 1/4.
//! * `proving.partitions_in_flight`: as many 32 GiB PoRep partitions as fit
//!   beside its HOT key in the engine's budget, 2 to 8.
//! * `proving.synthesis_workers`: one per 16 cores, at least 1, at most one
//!   less than the partitions in flight (one is always proving).
//! * `limits.request_memory`: 1/8 of the memory, at least 8 GiB (checking
//!   one 256 MiB C1).
//! * `proving.post_aux_pool`: one 32 GiB WindowPoSt partition's aux vector
//!   (4.06 GB, kept between partitions for the next native witness to write
//!   over), carved out of the engine's budget, when a 32 GiB WindowPoSt
//!   runs beside it and so does every 32 GiB proof that runs without it;
//!   else off.

use cuzk_groth16::params::KeySummary;
use cuzk_pipeline::PartitionFootprint;

use crate::srs::fit::{key_bytes, shape_of};

/// What the defaults are chosen from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoxFacts {
    /// Memory this process may use, bytes.
    pub(crate) memory: u64,
    /// Cores it may run on.
    pub(crate) cores: usize,
}

impl BoxFacts {
    /// This box ([`crate::resources`]); 16 GiB if its memory cannot be read.
    pub fn here() -> Self {
        BoxFacts {
            memory: crate::resources::memory().unwrap_or(16 << 30),
            cores: crate::resources::cores(),
        }
    }
}

/// The settings chosen for a box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chosen {
    /// Host memory of partitions and HOT keys, bytes.
    pub(crate) engine_memory_budget: u64,
    /// Of it, what HOT keys may hold, bytes.
    pub(crate) host_budget: u64,
    /// Partitions admitted into the engine at once.
    pub(crate) partitions_in_flight: usize,
    /// Partitions synthesized at once.
    pub(crate) synthesis_workers: usize,
    /// Memory for requests being checked, bytes.
    pub(crate) request_memory: u64,
    /// Of the engine's budget, what the native PoSt witnesses' aux pool
    /// keeps (0: off), bytes.
    pub(crate) post_aux_pool: u64,
}

impl Chosen {
    /// What the engine's partitions and HOT keys share: its budget less
    /// the aux pool.
    pub(crate) fn engine_share(&self) -> u64 {
        self.engine_memory_budget.saturating_sub(self.post_aux_pool)
    }
}

/// A 32 GiB WindowPoSt partition's aux values (126,902,376).
pub(crate) fn window_post_aux_values() -> u64 {
    Known::WindowPost32G.summary().l.count
}

/// Their vector's bytes.
pub(crate) fn window_post_aux_bytes() -> u64 {
    window_post_aux_values() * std::mem::size_of::<blstrs::Scalar>() as u64
}

/// The defaults for `b` (see the module docs for each rule).
pub(crate) fn choose(b: BoxFacts) -> Chosen {
    let without = choose_with_pool(b, 0);
    let with = choose_with_pool(b, window_post_aux_bytes());
    let keeps_running = Known::ALL.iter().all(|k| {
        [true, false]
            .iter()
            .all(|&gpu| !runs(*k, &without, gpu) || runs(*k, &with, gpu))
    });
    if keeps_running && runs(Known::WindowPost32G, &with, true) {
        with
    } else {
        without
    }
}

fn choose_with_pool(b: BoxFacts, post_aux_pool: u64) -> Chosen {
    let engine_memory_budget = cuzk_pipeline::host::engine_share(b.memory);
    let host_budget = b.memory / 2;
    let porep = Known::Porep32G.summary();
    let partition = gpu_partition(&porep).total();
    let beside_key = engine_memory_budget
        .saturating_sub(post_aux_pool)
        .saturating_sub(key_bytes(&porep));
    let partitions_in_flight = ((beside_key / partition) as usize).clamp(2, 8);
    let synthesis_workers = (b.cores / 16).clamp(1, partitions_in_flight - 1);
    Chosen {
        engine_memory_budget,
        host_budget,
        partitions_in_flight,
        synthesis_workers,
        request_memory: (b.memory / 8).max(8 << 30),
        post_aux_pool,
    }
}

/// The 32 GiB circuits, by their counts (BENCHMARKS.md, "circuit counts":
/// constraints' domain, inputs, aux, A-aux, B-input, B-aux densities; the
/// PoRep and WindowPoSt key sizes they give, 47.4 GB and 60.78 GB, are the
/// files' sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Known {
    /// The 32 GiB PoRep (10 partitions).
    Porep32G,
    /// One 32 GiB WindowPoSt partition.
    WindowPost32G,
    /// The 32 GiB WinningPoSt.
    WinningPost32G,
    /// The 32 GiB SnapDeals update (16 partitions).
    Snap32G,
}

impl Known {
    /// Every circuit, in declaration order.
    pub(crate) const ALL: [Known; 4] = [
        Known::Porep32G,
        Known::WindowPost32G,
        Known::WinningPost32G,
        Known::Snap32G,
    ];

    /// The daemon's circuit id.
    pub(crate) fn circuit_id(self) -> &'static str {
        match self {
            Known::Porep32G => "porep-32g",
            Known::WindowPost32G => "wpost-32g",
            Known::WinningPost32G => "winning-32g",
            Known::Snap32G => "snap-32g",
        }
    }

    /// The key's section counts.
    pub(crate) fn summary(self) -> KeySummary {
        // (domain log2, inputs, aux, A-aux, B-input, B-aux)
        let (log2, inputs, aux, a_aux, b_input, b_aux): (u32, u64, u64, u64, u64, u64) = match self
        {
            Known::Porep32G => (27, 328, 130_169_893, 129_753_292, 1, 33_112_281),
            Known::WindowPost32G => (27, 25_840, 126_902_376, 96_179_805, 1, 91_925_766),
            Known::WinningPost32G => (19, 133, 375_210, 284_196, 1, 272_184),
            Known::Snap32G => (27, 5, 80_978_488, 80_743_581, 1, 20_983_607),
        };
        let b = b_input + b_aux;
        KeySummary::from_counts(inputs, (1 << log2) - 1, aux, a_aux + inputs, b, b)
    }
}

/// One partition's host reservation on a GPU (the witness; the prover's
/// working set is in VRAM).
pub(crate) fn gpu_partition(key: &KeySummary) -> PartitionFootprint {
    PartitionFootprint::with_working_set(&shape_of(key), 0)
}

/// One partition's host reservation on the CPU backend.
pub(crate) fn cpu_partition(key: &KeySummary) -> PartitionFootprint {
    PartitionFootprint::cpu(&shape_of(key))
}

/// Whether `known`'s jobs run under `chosen`: its key file within the key
/// budget, and its parsed key with one partition within the engine's.
pub(crate) fn runs(known: Known, chosen: &Chosen, on_gpu: bool) -> bool {
    let s = known.summary();
    let partition = if on_gpu {
        gpu_partition(&s)
    } else {
        cpu_partition(&s)
    };
    s.file_len <= chosen.host_budget && key_bytes(&s) + partition.total() <= chosen.engine_share()
}

/// A card's VRAM as the driver reports it: 16, 24, 32 and 80 GiB cards,
/// and the H200's 143,771 MiB ("141 GB").
pub(crate) const CARDS: [(&str, u64); 5] = [
    ("16 GB", 16 << 30),
    ("24 GB", 24 << 30),
    ("32 GB", 32 << 30),
    ("80 GB", 80 << 30),
    ("141 GB", 143_771 << 20),
];

/// The boxes of the budget table, GiB.
pub(crate) const BOXES: [u64; 3] = [128, 256, 512];

/// `proving.vram_budget = "auto"` on a card of `total` bytes, all free:
/// less the margin the arena keeps (1 GiB or 1/33). The driver's context
/// takes a few hundred MiB more on a real card.
pub(crate) fn auto_vram_budget(total: u64) -> u64 {
    total.saturating_sub((1u64 << 30).max(total / 33))
}

/// How a partition of `known` runs on a card with `budget` bytes of arena
/// (cuzk-gpu's own plan: the key resident or streamed, and how many prover
/// workers fit), with a, b, c computed on the host (full synthesis).
pub(crate) fn on_card(known: Known, budget: u64) -> String {
    let shape = cuzk_gpu::Shape::of_circuit(&shape_of(&known.summary()));
    match cuzk_gpu::VramPlan::new(shape, budget, &cuzk_gpu::CudaFootprints) {
        Ok(plan) => match plan.mode {
            cuzk_gpu::SrsMode::Resident => {
                format!(
                    "key resident, room for {} worker(s)",
                    plan.workers_that_fit()
                )
            }
            cuzk_gpu::SrsMode::Streamed { .. } => "key streamed, 1 worker".to_string(),
        },
        Err(_) => "does not fit".to_string(),
    }
}

/// The budget tables of `docs/operators.md`, from the rules above and the
/// cards' budgets (a test checks the document holds exactly these).
pub fn budget_tables() -> String {
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
    let mut o = String::new();
    o.push_str("| box memory | engine_memory_budget | srs.host_budget | post_aux_pool | partitions_in_flight | synthesis_workers (32 cores) | request_memory | 32 GiB PoRep, WindowPoSt, WinningPoSt, SnapDeals (GPU) |\n");
    o.push_str("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for memory in BOXES {
        let c = choose(BoxFacts {
            memory: memory << 30,
            cores: 32,
        });
        let fits: Vec<&str> = Known::ALL
            .iter()
            .map(|k| {
                if runs(*k, &c, true) {
                    "runs"
                } else {
                    "refused"
                }
            })
            .collect();
        o.push_str(&format!(
            "| {memory} GiB | {} | {} | {} | {} | {} | {} | {} |\n",
            gib(c.engine_memory_budget),
            gib(c.host_budget),
            gib(c.post_aux_pool),
            c.partitions_in_flight,
            c.synthesis_workers,
            gib(c.request_memory),
            fits.join(", ")
        ));
    }
    o.push('\n');
    o.push_str("| card | arena (`vram_budget = \"auto\"`) | porep-32g | wpost-32g | snap-32g | winning-32g |\n");
    o.push_str("| --- | --- | --- | --- | --- | --- |\n");
    for (name, total) in CARDS {
        let budget = auto_vram_budget(total);
        o.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} |\n",
            gib(budget),
            on_card(Known::Porep32G, budget),
            on_card(Known::WindowPost32G, budget),
            on_card(Known::Snap32G, budget),
            on_card(Known::WinningPost32G, budget),
        ));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn the_known_keys_have_their_files_sizes() {
        let gb = |k: Known| k.summary().file_len as f64 / 1e9;
        assert!(
            (gb(Known::WindowPost32G) - 60.78).abs() < 0.05,
            "{}",
            gb(Known::WindowPost32G)
        );
        assert!(
            (gb(Known::Porep32G) - 47.4).abs() < 0.1,
            "{}",
            gb(Known::Porep32G)
        );
    }

    #[test]
    fn a_32gib_window_post_runs_with_default_settings_on_a_128gib_box() {
        // MemTotal of a 128 GiB box is a little under 128 GiB.
        for memory in [128 * GIB, 125 * GIB] {
            let chosen = choose(BoxFacts { memory, cores: 32 });
            for on_gpu in [true, false] {
                for k in Known::ALL {
                    assert!(
                        runs(k, &chosen, on_gpu),
                        "{k:?} on {memory} (gpu {on_gpu}): {chosen:?}"
                    );
                }
            }
            // The former key budget (3/8 of the memory) refused it.
            assert!(Known::WindowPost32G.summary().file_len > memory / 8 * 3);
        }
    }

    #[test]
    fn defaults_grow_with_the_box() {
        let at = |gib: u64, cores: usize| {
            choose(BoxFacts {
                memory: gib * GIB,
                cores,
            })
        };
        let small = at(24, 2);
        assert_eq!(
            (small.partitions_in_flight, small.synthesis_workers),
            (2, 1)
        );
        assert_eq!(small.request_memory, 8 * GIB);
        let c128 = at(128, 32);
        assert_eq!((c128.partitions_in_flight, c128.synthesis_workers), (3, 2));
        assert_eq!(c128.engine_memory_budget, 96 * GIB);
        assert_eq!(c128.host_budget, 64 * GIB);
        // One 32 GiB WindowPoSt aux vector on every box that fits it.
        assert_eq!(window_post_aux_bytes(), 126_902_376 * 32);
        assert_eq!(c128.post_aux_pool, window_post_aux_bytes());
        assert_eq!(small.post_aux_pool, 0);
        let c512 = at(512, 128);
        assert_eq!((c512.partitions_in_flight, c512.synthesis_workers), (8, 7));
        assert_eq!(c512.request_memory, 64 * GIB);
    }

    #[test]
    fn the_operators_guide_holds_the_computed_budget_tables() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/operators.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let tables = budget_tables();
        assert!(
            doc.contains(&tables),
            "docs/operators.md does not hold the tables the defaults give; they are now:\n{tables}"
        );
    }
}
