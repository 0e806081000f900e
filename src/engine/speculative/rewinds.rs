//! A window's checkpoints at evenly spaced times, so that a rollback replays the window from
//! the last of them before the earliest find instead of from its start.
//!
//! A run saves each mark as it passes it (before any event or layer switch-on at or after the
//! mark's time). A rollback to mark `j` keeps the saves before and at `j`: the layers a check
//! finds are switched on at or after their find, never before the earliest, so the run up to
//! that mark is the one the next run would make.

use super::checkpoint::Checkpoint;
use super::history::History;
use crate::engine::event_loop::EventLoop;
use crate::engine::Processed;

/// Marks per window, the first at its start.
const MARKS: usize = 8;

/// The saved states of the window being run (see the module docs).
#[derive(Debug, Default)]
pub(super) struct Rewinds {
    /// The marks' times, ascending.
    marks: Vec<f64>,
    /// One save a mark (buffers reused from window to window).
    saved: Vec<Saved>,
    /// Saves `0..valid` hold states of the current run.
    valid: usize,
}

/// The state at one mark.
#[derive(Debug, Default)]
struct Saved {
    checkpoint: Checkpoint,
    /// The history's length then.
    history: usize,
    /// The window's last event before it.
    processed: Option<Processed>,
}

impl Rewinds {
    /// Places the marks of the window `[start, end]`; nothing is saved yet.
    pub(super) fn begin(&mut self, start: f64, end: f64) {
        let step = (end - start) / MARKS as f64;
        self.marks.clear();
        self.marks
            .extend((0..MARKS).map(|j| start + j as f64 * step));
        self.saved.resize_with(MARKS, Saved::default);
        self.valid = 0;
    }

    /// The time of the next mark to save, if any is left.
    pub(super) fn due(&self) -> Option<f64> {
        self.marks.get(self.valid).copied()
    }

    /// The mark `k` marks on from the last one saved (a run's start: the window's, or the mark
    /// a rollback restored), if it is inside the window.
    pub(super) fn ahead(&self, k: usize) -> Option<f64> {
        let from = self.valid.max(1) - 1;
        self.marks.get(from + k).copied()
    }

    /// Saves `sim`, `history` and the window's last event `processed` at the next mark (the run
    /// has processed everything before it).
    pub(super) fn save(
        &mut self,
        sim: &EventLoop,
        history: &mut History,
        processed: Option<Processed>,
    ) {
        let saved = &mut self.saved[self.valid];
        saved.checkpoint.save(sim);
        saved.history = history.mark(&sim.model.state, self.marks[self.valid]);
        saved.processed = processed;
        self.valid += 1;
    }

    /// Puts `sim` and `history` back to the last save at or before `t`; returns its time and
    /// the window's last event then. The window's start is always saved, so there is one.
    pub(super) fn restore_before(
        &mut self,
        t: f64,
        sim: &mut EventLoop,
        history: &mut History,
    ) -> (f64, Option<Processed>) {
        let j = self.marks[..self.valid].partition_point(|&m| m <= t).max(1) - 1;
        let saved = &self.saved[j];
        saved.checkpoint.restore(sim);
        history.rewind(saved.history, &sim.model.state, self.marks[j]);
        self.valid = j + 1;
        (self.marks[j], saved.processed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_ahead_count_from_where_the_run_starts_and_stay_inside_the_window() {
        let mut r = Rewinds::default();
        r.begin(1.0, 2.0);
        // A window's first run starts at its first mark.
        assert_eq!((r.ahead(1), r.ahead(2)), (Some(1.125), Some(1.25)));
        // After a rollback to mark j (saves 0..=j kept), the run from there.
        r.valid = 4;
        assert_eq!(r.ahead(2), Some(1.625));
        r.valid = 7;
        assert_eq!((r.ahead(1), r.ahead(2)), (Some(1.875), None));
        r.valid = 8;
        assert_eq!(r.ahead(1), None);
    }
}
