//! What the box has, as the daemon's defaults see it: memory and cores from
//! cuzk-pipeline's [`cuzk_pipeline::host`] (the least of `/proc/meminfo` and
//! the cgroup limit; the affinity and CPU quota), re-exported under the
//! daemon's name, NVIDIA GPUs on the PCI bus whether or not a driver is
//! loaded, and the CPU's model.

use std::path::Path;

pub use cuzk_pipeline::host::memory_source;
pub(crate) use cuzk_pipeline::host::{cores, memory};

/// NVIDIA display or 3D controllers under a sysfs PCI device folder
/// (`/sys/bus/pci/devices`): vendor 0x10de, class 0x03xxxx. Counts the
/// cards a driver may not see (none loaded, too old), so that a daemon on a
/// GPU box never proves on the CPU without being told to.
pub(crate) fn nvidia_gpus_on_pci(devices: &Path) -> Vec<String> {
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
pub(crate) fn cpu_model() -> String {
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
