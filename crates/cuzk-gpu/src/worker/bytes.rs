//! What a worker's last partition or batch moved between host and device:
//! the report's key and parked bytes and `Backend::last_crossed`'s total.

use super::Worker;

impl Worker {
    /// What the last partition or batch moved (the report's key and
    /// parked bytes), cleared before the next.
    pub(crate) fn forget_last_run(&mut self) {
        self.last_key_bytes = 0;
        self.last_parked = (0, 0);
        self.last_moved = 0;
    }

    /// The bytes that crossed PCIe for the last partition, or each
    /// member's share of the last batch: the key's chunks, parked H
    /// coefficients both ways, the aux values, the streamed matrices (a
    /// resident key's or matrices' one upload not counted).
    pub(crate) fn last_crossed(&self) -> u64 {
        self.last_key_bytes + 2 * self.last_parked.1 + self.last_moved
    }

    /// After a batch of `members`: the key's and the other bytes become
    /// each member's share.
    pub(crate) fn share_last_run(&mut self, members: usize) {
        let members = members.max(1) as u64;
        self.last_key_bytes /= members;
        self.last_moved /= members;
    }
}
