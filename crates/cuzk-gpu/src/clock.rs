//! [`Clock`]: device-event marks of a partition's stages on the compute
//! stream, read into its `StageTimings` once the stream has run them.

use std::time::Duration;

use cuzk_cuda::{Event, Stream};
use cuzk_groth16::prover::StageTimings;

/// Device-event marks of one partition's stages on the compute stream.
pub(crate) struct Clock {
    pub(crate) marks: Vec<(&'static str, Event, Event)>,
    pub(crate) open: Option<(&'static str, Event)>,
}

impl Clock {
    pub(crate) fn new() -> Self {
        Clock {
            marks: Vec::new(),
            open: None,
        }
    }

    pub(crate) fn start(&mut self, s: &Stream, name: &'static str) -> cuzk_cuda::Result<()> {
        self.open = Some((name, s.record()?));
        Ok(())
    }

    pub(crate) fn stop(&mut self, s: &Stream) -> cuzk_cuda::Result<()> {
        if let Some((name, start)) = self.open.take() {
            self.marks.push((name, start, s.record()?));
        }
        Ok(())
    }

    /// Each stage's device time (waits for the last event).
    pub(crate) fn report(self, t: &mut StageTimings) -> cuzk_cuda::Result<()> {
        for (name, a, b) in self.marks {
            let ms = a.elapsed_ms(&b)?;
            t.record(name, Duration::from_secs_f64(f64::from(ms) / 1e3));
        }
        Ok(())
    }
}
