//! Curio's own cuzk daemon configuration, read as cuzk's: an operator who
//! replaces Curio's daemon keeps its TOML file (`cuzk --config FILE`, or
//! `cuzk config import FILE` to write cuzk's from it). Each of its keys is
//! mapped onto cuzk's or, where cuzk has no such knob, ignored with a note
//! saying why; a key this mapping does not know is refused by name.
//!
//! | Curio's key | cuzk's | how |
//! | --- | --- | --- |
//! | `daemon.listen` | `listen.addresses` | the one address (`unix:///run/curio/cuzk.sock` or `HOST:PORT`) |
//! | `daemon.status_listen` | `listen.status_address` | as is (`""`: none) |
//! | `memory.total_budget` | `proving.engine_memory_budget` | a size; `"auto"`: cuzk's default (3/4 of the memory, cgroup-aware) |
//! | `memory.safety_margin` | — | cuzk's automatic budget leaves 1/4 of the memory |
//! | `memory.eviction_min_idle` | `srs.idle_secs` | `"5m"`, `"300s"`, `"1h"` or seconds |
//! | `gpus.devices` | `proving.gpus` | the CUDA ordinals (empty: all) |
//! | `gpus.gpu_workers_per_device` | `proving.gpu_workers` | as is |
//! | `gpus.gpu_threads` | — | cuzk's GPU workers keep no CPU pool of their own |
//! | `scheduler.*` | — | cuzk batches nothing: every job's partitions are pipelined, by priority |
//! | `synthesis.threads` | — | synthesis uses every core (rayon) |
//! | `pipeline.synthesis_concurrency` | `proving.synthesis_workers` | as is |
//! | `pipeline.slot_size` | `proving.partitions_in_flight` | plus one (the partition proving); 0: cuzk's default |
//! | `pipeline.enabled`, `synthesis_lookahead`, `max_gpu_queue_depth` | — | always pipelined; bounded by memory and `partitions_in_flight` |
//! | `srs.param_cache` | `proving.params_dir` | as is |
//! | `srs.preload` | — | Curio ignores it too; cuzk's is `srs.preload` with its circuit ids |
//! | `logging.level` | `log.level` | as is |
//! | `logging.format` | `log.format` | `"json"`, else `"text"` |
//! | deprecated `memory.pinned_budget`, `memory.working_memory_budget`, `synthesis.partition_workers` | — | Curio ignores them |

use crate::config::{size, Config};

/// Sections only Curio's format has.
const CURIO_SECTIONS: [&str; 7] = [
    "daemon",
    "memory",
    "gpus",
    "scheduler",
    "synthesis",
    "pipeline",
    "logging",
];

/// Whether a parsed file is Curio's format: one of its own sections, or
/// its `srs.param_cache`.
pub(crate) fn is_curio(table: &toml::Table) -> bool {
    CURIO_SECTIONS.iter().any(|s| table.contains_key(*s))
        || table
            .get("srs")
            .and_then(|s| s.as_table())
            .is_some_and(|s| s.contains_key("param_cache"))
}

/// cuzk's configuration from Curio's, and a note per key on what became of it.
pub(crate) fn import(table: &toml::Table) -> Result<(Config, Vec<String>), String> {
    let mut c = Config::default();
    let mut notes = Vec::new();
    for (section, value) in table {
        let keys = value
            .as_table()
            .ok_or_else(|| format!("{section} is not a section"))?;
        for (key, v) in keys {
            let name = format!("{section}.{key}");
            let note = map(&mut c, &name, v)?;
            notes.push(format!("{name} = {v}: {note}"));
        }
    }
    c.validate().map_err(|e| e.to_string())?;
    Ok((c, notes))
}

fn text<'a>(name: &str, v: &'a toml::Value) -> Result<&'a str, String> {
    v.as_str()
        .ok_or_else(|| format!("{name}: expected a string, found {v}"))
}

fn count(name: &str, v: &toml::Value) -> Result<usize, String> {
    v.as_integer()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("{name}: expected a count, found {v}"))
}

/// Curio's durations: `"5m"`, `"300s"`, `"1h"`, or seconds.
pub(crate) fn seconds(name: &str, v: &toml::Value) -> Result<u64, String> {
    if let Some(n) = v.as_integer() {
        return u64::try_from(n).map_err(|_| format!("{name}: {n} is negative"));
    }
    let t = text(name, v)?.trim();
    let (digits, scale) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1),
        Some((i, 'm')) => (&t[..i], 60),
        Some((i, 'h')) => (&t[..i], 3600),
        _ => (t, 1),
    };
    digits
        .trim()
        .parse::<u64>()
        .map(|n| n * scale)
        .map_err(|_| format!("{name}: {t:?} is not a duration such as \"5m\" or \"300s\""))
}

fn map(c: &mut Config, name: &str, v: &toml::Value) -> Result<String, String> {
    let ignored = |why: &str| Ok(format!("not used: {why}"));
    match name {
        "daemon.listen" => {
            c.listen.addresses = vec![text(name, v)?.to_string()];
            Ok("listen.addresses".into())
        }
        "daemon.status_listen" => {
            c.listen.status_address = text(name, v)?.to_string();
            Ok("listen.status_address".into())
        }
        "memory.total_budget" => {
            let t = text(name, v)?;
            c.proving.engine_memory_budget = if t.trim() == "auto" {
                0
            } else {
                size::parse(t).map_err(|e| format!("{name}: {e}"))?
            };
            Ok("proving.engine_memory_budget (\"auto\": 3/4 of the memory)".into())
        }
        "memory.safety_margin" => ignored("cuzk's automatic budget leaves 1/4 of the memory"),
        "memory.eviction_min_idle" => {
            c.srs.idle_secs = seconds(name, v)?;
            Ok("srs.idle_secs".into())
        }
        "memory.pinned_budget" | "memory.working_memory_budget" | "synthesis.partition_workers" => {
            ignored("deprecated in Curio's daemon too")
        }
        "gpus.devices" => {
            let list = v
                .as_array()
                .ok_or_else(|| format!("{name}: expected a list of GPU ordinals, found {v}"))?;
            c.proving.gpus = list
                .iter()
                .map(|o| {
                    o.as_integer()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| format!("{name}: {o} is not a GPU ordinal"))
                })
                .collect::<Result<_, _>>()?;
            Ok("proving.gpus".into())
        }
        "gpus.gpu_workers_per_device" => {
            c.proving.gpu_workers = count(name, v)?;
            Ok("proving.gpu_workers".into())
        }
        "gpus.gpu_threads" => ignored("cuzk's GPU workers keep no CPU pool of their own"),
        "scheduler.max_batch_size" | "scheduler.max_batch_wait_ms" | "scheduler.sort_by_type" => {
            ignored("cuzk batches nothing: every job's partitions are pipelined, by priority")
        }
        "synthesis.threads" => ignored("synthesis uses every core"),
        "pipeline.synthesis_concurrency" => {
            c.proving.synthesis_workers = count(name, v)?;
            Ok("proving.synthesis_workers".into())
        }
        "pipeline.slot_size" => {
            let n = count(name, v)?;
            c.proving.partitions_in_flight = if n == 0 { 0 } else { n + 1 };
            Ok("proving.partitions_in_flight (plus the partition proving; 0: the default)".into())
        }
        "pipeline.enabled" | "pipeline.synthesis_lookahead" | "pipeline.max_gpu_queue_depth" => {
            ignored("always pipelined, bounded by memory and proving.partitions_in_flight")
        }
        "srs.param_cache" => {
            c.proving.params_dir = text(name, v)?.to_string();
            Ok("proving.params_dir".into())
        }
        "srs.preload" => ignored("Curio's daemon ignores it too; cuzk's srs.preload takes circuit ids such as \"porep-32g\""),
        "logging.level" => {
            c.log.level = text(name, v)?.to_string();
            Ok("log.level".into())
        }
        "logging.format" => {
            let json = text(name, v)? == "json";
            c.log.format = if json { "json" } else { "text" }.into();
            Ok("log.format".into())
        }
        other => Err(format!(
            "{other} is not a key of Curio's cuzk configuration this version maps (see crates/cuzk-daemon/src/curio.rs); a file that mixes Curio's sections with cuzk's is refused too"
        )),
    }
}

/// cuzk's configuration as TOML, with the notes of an import as comments
/// above it (`cuzk config import`).
pub(crate) fn write(config: &Config, notes: &[String], from: &str) -> Result<String, String> {
    let mut out = format!("# cuzk daemon configuration, imported from Curio's {from}\n");
    for n in notes {
        out.push_str(&format!("#   {n}\n"));
    }
    out.push('\n');
    out.push_str(&toml::to_string_pretty(config).map_err(|e| e.to_string())?);
    Ok(out)
}

/// `cuzk config import`: cuzk's configuration, as TOML with the notes,
/// from the Curio file at `path`; refuses a file that is not Curio's.
pub fn import_file(path: &std::path::Path) -> Result<String, String> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {shown}: {e}"))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| format!("{shown} is not TOML: {e}"))?;
    if !is_curio(&table) {
        return Err(format!(
            "{shown} is not Curio's cuzk configuration (none of its [daemon], [memory], [gpus], [scheduler], [synthesis], [pipeline], [logging] sections, nor srs.param_cache); cuzk reads its own as it is"
        ));
    }
    let (config, notes) = import(&table).map_err(|e| format!("importing {shown}: {e}"))?;
    write(&config, &notes, &shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A configuration as Curio's daemon documents it, every key set.
    const CURIO: &str = r#"
[daemon]
listen = "unix:///run/curio/cuzk.sock"
status_listen = "127.0.0.1:9821"

[memory]
total_budget = "400GiB"
safety_margin = "5GiB"
eviction_min_idle = "10m"

[gpus]
devices = [0, 2]
gpu_threads = 32
gpu_workers_per_device = 3

[scheduler]
max_batch_size = 1
max_batch_wait_ms = 10000
sort_by_type = true

[synthesis]
threads = 0

[pipeline]
enabled = true
synthesis_lookahead = 1
synthesis_concurrency = 2
slot_size = 3
max_gpu_queue_depth = 8

[srs]
param_cache = "/data/zk/params"

[logging]
level = "debug"
format = "json"
"#;

    #[test]
    fn curios_configuration_maps_onto_cuzks() {
        let table: toml::Table = toml::from_str(CURIO).unwrap();
        assert!(is_curio(&table));
        let (c, notes) = import(&table).unwrap();
        assert_eq!(c.listen.addresses, ["unix:///run/curio/cuzk.sock"]);
        assert_eq!(c.listen.status_address, "127.0.0.1:9821");
        assert_eq!(c.proving.engine_memory_budget, 400 << 30);
        assert_eq!(c.srs.idle_secs, 600);
        assert_eq!(c.proving.gpus, [0, 2]);
        assert_eq!(c.proving.gpu_workers, 3);
        assert_eq!(c.proving.synthesis_workers, 2);
        assert_eq!(c.proving.partitions_in_flight, 4);
        assert_eq!(c.proving.params_dir, "/data/zk/params");
        assert_eq!(
            (c.log.level.as_str(), c.log.format.as_str()),
            ("debug", "json")
        );
        // Everything else is cuzk's default.
        assert_eq!(c.limits, Config::default().limits);
        // One note per key, the ignored ones saying why.
        assert_eq!(notes.len(), 20, "{notes:#?}");
        assert!(notes
            .iter()
            .any(|n| n.starts_with("gpus.gpu_threads = 32: not used")));
        // The same through Config::parse (what `cuzk --config` reads).
        assert_eq!(Config::parse(CURIO, Path::new("cuzk.toml")).unwrap(), c);
        // `cuzk config import` writes cuzk's form, which reads back the same.
        let written = write(&c, &notes, "cuzk.toml").unwrap();
        let back = Config::parse(&written, Path::new("imported.toml")).unwrap();
        assert_eq!(back, c);
        assert!(!is_curio(&toml::from_str(&written).unwrap()));
    }

    #[test]
    fn unknown_or_mixed_keys_and_bad_values_are_refused_by_name() {
        let refused = |text: &str, words: &str| {
            let e = Config::parse(text, Path::new("c.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(words), "{text}: {e}");
        };
        refused("[daemon]\nlisten = \"x:1\"\nlisen = 1\n", "daemon.lisen");
        refused(
            "[daemon]\nlisten = \"127.0.0.1:9820\"\n[proving]\nbackend = \"cpu\"\n",
            "proving.backend",
        );
        refused("[memory]\ntotal_budget = \"lots\"\n", "memory.total_budget");
        refused(
            "[memory]\neviction_min_idle = \"soon\"\n",
            "memory.eviction_min_idle",
        );
        refused("[gpus]\ndevices = [-1]\n", "gpus.devices");
        refused("[daemon]\nlisten = \"nowhere\"\n", "nowhere");
    }

    #[test]
    fn durations_as_curio_writes_them() {
        let s = |t: &str| seconds("k", &toml::Value::String(t.into()));
        assert_eq!(s("5m"), Ok(300));
        assert_eq!(s("300s"), Ok(300));
        assert_eq!(s("2h"), Ok(7200));
        assert_eq!(s("42"), Ok(42));
        assert_eq!(seconds("k", &toml::Value::Integer(7)), Ok(7));
        assert!(s("m").is_err());
    }
}
