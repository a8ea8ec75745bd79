//! HOT keys on the devices: on a CUDA backend a HOT key is also resident in
//! each GPU's VRAM once a partition has used it there (cuzk-gpu's
//! [`SrsSlot`], shared by the device's workers). A key that leaves HOT
//! (idle, evicted for room, `EvictSRS`) is dropped from every device's
//! slot too, after the manager's lock is released (a slot's lock is held
//! through an upload). Which keys each GPU holds, and their VRAM bytes, is
//! read from the slots themselves: a slot may also have dropped a key on its
//! own, for a partition's room.
//!
//! The CPU backend has no slot: it proves from the host key, and nothing
//! is resident anywhere else; [`SrsManager::device_keys`] is empty then.

use std::sync::Arc;

use cuzk_gpu::{KeyShape, SlotUsage, SrsSlot};
use cuzk_groth16::ProvingKey;

use super::{SrsManager, Tier};

/// One device's resident keys, as the manager was given them.
#[derive(Debug, Clone)]
pub(crate) struct DeviceKeys {
    /// The engine's name of the device ("cuda-0").
    pub device: String,
    /// Its slot.
    pub slot: SrsSlot,
}

/// A HOT key resident on a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResidentKey {
    /// The device's name ("cuda-0").
    pub device: String,
    /// The key's circuit id.
    pub circuit_id: &'static str,
    /// Device bytes of its points.
    pub vram_bytes: u64,
}

/// Device bytes of a key's points, as cuzk-gpu counts them.
fn vram_bytes(key: &ProvingKey) -> u64 {
    KeyShape {
        h: key.h.len(),
        l: key.l.len(),
        a: key.a.len(),
        b_g1: key.b_g1.len(),
        b_g2: key.b_g2.len(),
        h_copies: 1,
    }
    .bytes()
}

impl SrsManager {
    /// Gives the manager the devices' slots (once, at start; none on the
    /// CPU backend, which is logged).
    pub(crate) fn use_device_keys(&self, devices: Vec<DeviceKeys>) {
        if devices.is_empty() {
            tracing::info!(
                "no device-resident keys (CPU backend): HOT means parsed in host memory only"
            );
        }
        for d in &devices {
            tracing::info!(device = %d.device, "HOT keys stay resident in this GPU's VRAM once used there");
        }
        *self.devices.lock() = devices;
    }

    /// Drops the keys that left HOT from every device (called after the
    /// state lock is released).
    pub(super) fn release_from_devices(&self) {
        let leaving = std::mem::take(&mut self.state.lock().leaving);
        if leaving.is_empty() {
            return;
        }
        let devices = self.devices.lock().clone();
        for (id, key) in leaving {
            for d in &devices {
                match d.slot.evict(&key) {
                    Ok(true) => tracing::info!(
                        circuit_id = id,
                        device = %d.device,
                        vram_bytes = vram_bytes(&key),
                        "key evicted from VRAM (it left HOT)"
                    ),
                    Ok(false) => {}
                    Err(_) => tracing::warn!(
                        circuit_id = id,
                        device = %d.device,
                        "key left HOT but a partition on the device still uses its shape: \
                         it stays in VRAM until the device evicts it for room"
                    ),
                }
            }
        }
    }

    /// Every HOT key resident on a device now, with its VRAM bytes.
    pub(crate) fn resident(&self) -> Vec<ResidentKey> {
        let hot: Vec<(&'static str, Arc<ProvingKey>)> = {
            let state = self.state.lock();
            state
                .entries
                .iter()
                .filter(|(_, e)| e.tier == Tier::Hot)
                .filter_map(|(id, e)| Some((*id, Arc::clone(&e.loaded.as_ref()?.key))))
                .collect()
        };
        let devices = self.devices.lock().clone();
        let mut out = Vec::new();
        for d in &devices {
            for (id, key) in &hot {
                if d.slot.holds(key) {
                    out.push(ResidentKey {
                        device: d.device.clone(),
                        circuit_id: id,
                        vram_bytes: vram_bytes(key),
                    });
                }
            }
        }
        out
    }

    /// Each device's slot counters (keys, bytes, uploads, evictions).
    pub(crate) fn device_usage(&self) -> Vec<(String, SlotUsage)> {
        self.devices
            .lock()
            .iter()
            .map(|d| (d.device.clone(), d.slot.usage()))
            .collect()
    }
}
