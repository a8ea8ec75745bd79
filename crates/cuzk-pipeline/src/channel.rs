//! Bounded crossbeam channels with one lane per [`Priority`] class: a
//! receiver always takes from the most urgent non-empty lane, so a partition
//! overtakes queued ones of every lower class at the next free slot.
//!
//! Each lane is bounded on its own (a full `Normal` lane does not block a
//! `Critical` sender). A receiver's `recv` returns `None` once every sender is
//! gone and every lane is drained.

use crossbeam_channel::{bounded, Receiver, Select, SendError, Sender, TryRecvError};

use crate::job::Priority;

/// Creates a channel with `capacity` slots per priority class.
pub fn priority_channel<T>(capacity: usize) -> (PrioritySender<T>, PriorityReceiver<T>) {
    let (senders, receivers) = Priority::ALL.iter().map(|_| bounded(capacity)).unzip();
    (
        PrioritySender { lanes: senders },
        PriorityReceiver { lanes: receivers },
    )
}

/// The sending side; clone it per producer.
#[derive(Debug)]
pub struct PrioritySender<T> {
    lanes: Vec<Sender<T>>,
}

impl<T> Clone for PrioritySender<T> {
    fn clone(&self) -> Self {
        PrioritySender {
            lanes: self.lanes.clone(),
        }
    }
}

impl<T> PrioritySender<T> {
    /// Sends on `priority`'s lane, blocking while it is full (backpressure).
    pub fn send(&self, priority: Priority, msg: T) -> Result<(), SendError<T>> {
        self.lanes[priority.rank()].send(msg)
    }

    /// Messages waiting, all lanes.
    pub fn len(&self) -> usize {
        self.lanes.iter().map(Sender::len).sum()
    }

    /// Whether every lane is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The receiving side; clone it per consumer.
#[derive(Debug)]
pub struct PriorityReceiver<T> {
    lanes: Vec<Receiver<T>>,
}

impl<T> Clone for PriorityReceiver<T> {
    fn clone(&self) -> Self {
        PriorityReceiver {
            lanes: self.lanes.clone(),
        }
    }
}

impl<T> PriorityReceiver<T> {
    /// Takes the next message from the most urgent non-empty lane, blocking
    /// while all are empty; `None` when all senders are gone and all lanes
    /// are drained.
    pub fn recv(&self) -> Option<T> {
        loop {
            let mut live = Vec::with_capacity(self.lanes.len());
            for lane in &self.lanes {
                match lane.try_recv() {
                    Ok(msg) => return Some(msg),
                    Err(TryRecvError::Empty) => live.push(lane),
                    Err(TryRecvError::Disconnected) => {}
                }
            }
            if live.is_empty() {
                return None;
            }
            // Wait until some lane has a message (or disconnects), then scan
            // again in priority order: readiness of a lower lane must not let
            // it overtake a more urgent message that arrived at the same time.
            let mut select = Select::new_biased();
            for lane in &live {
                select.recv(lane);
            }
            select.ready();
        }
    }

    /// The next message from the most urgent non-empty lane, if one is
    /// waiting now; never blocks.
    pub fn try_recv(&self) -> Option<T> {
        self.lanes.iter().find_map(|lane| lane.try_recv().ok())
    }

    /// Messages waiting, all lanes.
    pub fn len(&self) -> usize {
        self.lanes.iter().map(Receiver::len).sum()
    }

    /// Whether every lane is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_urgent_lane_is_drained_first_then_disconnect_ends() {
        let (tx, rx) = priority_channel(4);
        tx.send(Priority::Normal, 1).unwrap();
        tx.send(Priority::Normal, 2).unwrap();
        tx.send(Priority::High, 10).unwrap();
        assert_eq!(rx.len(), 3);
        assert_eq!(rx.recv(), Some(10));
        assert_eq!(rx.recv(), Some(1));
        tx.send(Priority::High, 11).unwrap();
        assert_eq!(rx.recv(), Some(11));
        drop(tx);
        assert_eq!(rx.recv(), Some(2));
        assert_eq!(rx.recv(), None);
    }

    #[test]
    fn a_blocked_receiver_wakes_for_either_lane() {
        let (tx, rx) = priority_channel::<u32>(1);
        let t = std::thread::spawn(move || (rx.recv(), rx.recv()));
        tx.send(Priority::Normal, 5).unwrap();
        tx.send(Priority::High, 6).unwrap();
        drop(tx);
        let (a, b) = t.join().unwrap();
        let mut got = vec![a.unwrap(), b.unwrap()];
        got.sort();
        assert_eq!(got, vec![5, 6]);
    }
}
