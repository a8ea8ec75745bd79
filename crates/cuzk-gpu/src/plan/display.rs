//! How a plan reads in logs and errors: its mode, key, scratch, largest
//! stage and peak, then what it does beyond the plain resident layout.

use std::fmt;

use cuzk_arena::human;

use super::*;

impl fmt::Display for VramPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let big = self.largest_stage();
        write!(
            f,
            "{} under a {} budget: key {} on the device ({} total), scratch {} for {} pairs, \
             largest stage {} {}, peak {}",
            self.mode,
            human(self.budget),
            human(self.srs_device_bytes),
            human(self.srs_bytes),
            human(self.scratch_bytes),
            self.msm_len,
            big.name,
            human(big.bytes),
            human(self.peak())
        )?;
        if let Some(h) = self.h_shift {
            write!(
                f,
                "; H over shifted bases (c = {}, {} sets, {} copies)",
                h.window_bits, h.sets, h.copies
            )?;
        }
        if let Some(c) = self.h_kept {
            write!(f, "; H's chunks into kept buckets (c = {c}, one reduction)")?;
        }
        if self.h_poly == HPoly::Lean {
            write!(f, "; lean H polynomial (two vectors at a time)")?;
        }
        if self.interleaved {
            write!(f, "; L, A and B chunks among H's")?;
        }
        if matches!(self.mode, SrsMode::Streamed { .. }) {
            write!(f, "; a ring of {} chunk buffers", self.ring_slots())?;
            if self.ring_ahead > 0 {
                write!(f, " ({} filled during the H polynomial)", self.ring_ahead)?;
            }
        }
        match (self.abc_on_device(), self.matrices_streamed()) {
            (true, None) => write!(
                f,
                "; a, b, c on the device (matrices {} resident)",
                human(self.matrix_bytes)
            )?,
            (true, Some(terms)) => write!(
                f,
                "; a, b, c on the device (matrices streamed from the host, {terms} terms a chunk)"
            )?,
            (false, _) => {}
        }
        Ok(())
    }
}
