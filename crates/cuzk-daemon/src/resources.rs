//! What the box has, as the daemon's defaults see it: memory (the least of
//! `/proc/meminfo`'s `MemTotal` and the cgroup limit of this process, v1 or
//! v2, so a container's limit counts) and cores (the affinity and CPU quota,
//! through the standard library), NVIDIA GPUs on the PCI bus whether or not
//! a driver is loaded, and the CPU's model.

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
pub fn physical_memory(meminfo: &str) -> Option<u64> {
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
pub fn cgroup_memory_limit(root: &Path, proc_self_cgroup: &str) -> Option<u64> {
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

/// NVIDIA display or 3D controllers under a sysfs PCI device folder
/// (`/sys/bus/pci/devices`): vendor 0x10de, class 0x03xxxx. Counts the
/// cards a driver may not see (none loaded, too old), so that a daemon on a
/// GPU box never proves on the CPU without being told to.
pub fn nvidia_gpus_on_pci(devices: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(devices) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(|e| {
            let dir = e.ok()?.path();
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
            let vendor = read("vendor")?;
            let class = read("class")?;
            (vendor.trim() == "0x10de" && class.trim().starts_with("0x03"))
                .then(|| dir.file_name()?.to_str().map(str::to_string))
                .flatten()
        })
        .collect();
    found.sort();
    found
}

/// The CPU's model (`model name` of `/proc/cpuinfo`), or "cpu".
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "cpu".into())
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

    #[test]
    fn nvidia_cards_are_found_on_the_pci_bus() {
        let root = tempfile::tempdir().unwrap();
        let dev = |name: &str, vendor: &str, class: &str| {
            let d = root.path().join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("vendor"), format!("{vendor}\n")).unwrap();
            std::fs::write(d.join("class"), format!("{class}\n")).unwrap();
        };
        dev("0000:00:02.0", "0x8086", "0x030000"); // another vendor's VGA
        dev("0000:3b:00.0", "0x10de", "0x030200"); // an NVIDIA 3D controller
        dev("0000:3b:00.1", "0x10de", "0x040300"); // its audio function
        dev("0000:17:00.0", "0x10de", "0x030000"); // an NVIDIA VGA controller
        assert_eq!(
            nvidia_gpus_on_pci(root.path()),
            ["0000:17:00.0", "0000:3b:00.0"]
        );
        assert!(nvidia_gpus_on_pci(&root.path().join("absent")).is_empty());
    }
}
