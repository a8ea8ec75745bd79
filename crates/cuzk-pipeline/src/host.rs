//! What the host gives this process, as every engine's defaults see it:
//! memory (the least of `/proc/meminfo`'s `MemTotal` and the cgroup limit of
//! this process, v1 or v2, so a container's limit counts), cores (the
//! affinity and CPU quota, through the standard library), and the one rule
//! for the host memory partitions may fill: 3/4 of the memory, less a proving
//! key held in memory beside them.

use std::path::Path;

/// Memory this process may use, bytes: physical memory, or the cgroup's
/// limit when lower. `None` when neither can be read.
pub fn memory() -> Option<u64> {
    let physical = physical_memory(&std::fs::read_to_string("/proc/meminfo").ok()?);
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|c| cgroup_memory_limit(Path::new("/sys/fs/cgroup"), &c));
    match (physical, cgroup) {
        (Some(p), Some(c)) => Some(p.min(c)),
        (p, c) => p.or(c),
    }
}

/// Where [`memory`]'s answer came from, for `cuzk doctor` and the start log.
pub fn memory_source() -> &'static str {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|c| cgroup_memory_limit(Path::new("/sys/fs/cgroup"), &c));
    let physical = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| physical_memory(&m));
    match (physical, cgroup) {
        (Some(p), Some(c)) if c < p => "cgroup memory limit",
        (Some(_), _) => "/proc/meminfo MemTotal",
        (None, Some(_)) => "cgroup memory limit",
        (None, None) => "unknown",
    }
}

/// Cores this process may run on (affinity and CPU quota).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `MemTotal` of a `/proc/meminfo` text, bytes.
pub(crate) fn physical_memory(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The memory limit of the cgroup named in `proc_self_cgroup` (the text of
/// `/proc/self/cgroup`) under the cgroup file system at `root`: v2's
/// `memory.max`, v1's `memory.limit_in_bytes`, at the process's own cgroup
/// and at the root of the mount (a container sees its own cgroup there);
/// the lowest set limit. `None` when there is none ("max", or v1's
/// page-rounded 2^63).
pub(crate) fn cgroup_memory_limit(root: &Path, proc_self_cgroup: &str) -> Option<u64> {
    let mut files = vec![
        root.join("memory.max"),
        root.join("memory/memory.limit_in_bytes"),
    ];
    for line in proc_self_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if controllers.is_empty() {
            files.push(root.join(path).join("memory.max"));
        } else if controllers.split(',').any(|c| c == "memory") {
            files.push(root.join("memory").join(path).join("memory.limit_in_bytes"));
        }
    }
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .filter_map(|t| t.trim().parse::<u64>().ok())
        // v1 says "no limit" with a page-rounded i64::MAX.
        .filter(|n| *n < 1 << 62)
        .min()
}

/// The share of `memory` bytes an engine's partitions (and the keys lent
/// out of their budget) may hold: 3/4, the rest left to the OS, the page
/// cache and the process's own allocations.
pub fn engine_share(memory: u64) -> u64 {
    memory / 4 * 3
}

/// The memory budget of an engine with nothing else in memory:
/// [`engine_share`] of [`memory`] (8 GiB when it cannot be read).
pub fn default_memory_budget() -> u64 {
    memory().map_or(8 << 30, engine_share)
}

/// The host memory an engine may fill with partitions while `key_bytes` of
/// proving key stay in memory beside them: [`default_memory_budget`] less the
/// key. Returns the bytes and how they were derived, for logs and errors.
pub fn budget_beside_key(key_bytes: u64) -> (u64, String) {
    let three_quarters = default_memory_budget();
    (
        three_quarters.saturating_sub(key_bytes),
        format!(
            "3/4 of the memory ({}, {}) less the proving key ({})",
            crate::memory::human(three_quarters),
            memory_source(),
            crate::memory::human(key_bytes)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_is_read_in_kib() {
        let text = "MemTotal:       131072000 kB\nMemFree:  1 kB\n";
        assert_eq!(physical_memory(text), Some(131072000 * 1024));
        assert_eq!(physical_memory("nothing"), None);
    }

    #[test]
    fn partitions_get_three_quarters_less_the_key() {
        assert_eq!(engine_share(128 << 30), 96 << 30);
        let (whole, _) = budget_beside_key(0);
        assert_eq!(whole, default_memory_budget());
        let (less, why) = budget_beside_key(1 << 30);
        assert_eq!(less, whole.saturating_sub(1 << 30));
        assert!(why.contains("less the proving key (1.00 GiB)"), "{why}");
        // A key larger than the share leaves nothing, not a wrapped number.
        assert_eq!(budget_beside_key(u64::MAX).0, 0);
    }

    #[test]
    fn a_container_limit_is_found_in_cgroup_v1_and_v2() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        // No limit anywhere: v2 "max", v1 2^63 rounded to a page.
        std::fs::write(r.join("memory.max"), "max\n").unwrap();
        std::fs::create_dir_all(r.join("memory/docker/abc")).unwrap();
        std::fs::write(
            r.join("memory/memory.limit_in_bytes"),
            "9223372036854771712\n",
        )
        .unwrap();
        assert_eq!(cgroup_memory_limit(r, "0::/\n"), None);
        // v1: the process's cgroup has 64 GiB.
        std::fs::write(
            r.join("memory/docker/abc/memory.limit_in_bytes"),
            format!("{}\n", 64u64 << 30),
        )
        .unwrap();
        assert_eq!(
            cgroup_memory_limit(r, "4:memory:/docker/abc\n1:cpu:/\n"),
            Some(64 << 30)
        );
        // v2: a slice below with 100 GiB, and the process's own with 48 GiB.
        std::fs::create_dir_all(r.join("system.slice/cuzk.service")).unwrap();
        std::fs::write(
            r.join("system.slice/cuzk.service/memory.max"),
            format!("{}\n", 48u64 << 30),
        )
        .unwrap();
        assert_eq!(
            cgroup_memory_limit(r, "0::/system.slice/cuzk.service\n"),
            Some(48 << 30)
        );
    }
}
