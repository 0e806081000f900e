//! Run statistics: cheap counters, always on.

use serde::Serialize;

use crate::model::ForceTarget;
use crate::RunStats;

/// Events processed, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EventCounts {
    /// Stretching ticks (one per element event, or one per super-element event).
    pub stretching: u64,
    /// Bending ticks.
    pub bending: u64,
    /// Gravity ticks.
    pub gravity: u64,
    /// Prescribed-force ticks.
    pub prescribed: u64,
    /// Air-drag ticks.
    pub drag: u64,
    /// Contact events: slab failures, penalty ticks, broad-phase windows.
    pub contact: u64,
    /// Scripted velocity changes.
    pub script: u64,
    /// Snapshots (frames).
    pub snapshot: u64,
}

impl EventCounts {
    /// Counts a tick of a force acting through `target`.
    pub(crate) fn count_tick(&mut self, target: ForceTarget) {
        let count = match target {
            ForceTarget::Springs(_) | ForceTarget::Spring(_) => &mut self.stretching,
            ForceTarget::Hinges(_) | ForceTarget::Hinge(_) => &mut self.bending,
            ForceTarget::Gravity | ForceTarget::VertexGravity(_) => &mut self.gravity,
            ForceTarget::Prescribed(_) => &mut self.prescribed,
            ForceTarget::Drag => &mut self.drag,
        };
        *count += 1;
    }

    /// Total over all kinds.
    pub fn total(&self) -> u64 {
        self.stretching
            + self.bending
            + self.gravity
            + self.prescribed
            + self.drag
            + self.contact
            + self.script
            + self.snapshot
    }
}

/// What an ACM run did; written as `stats.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// What every method reports (model, clocks, simulated and wall time, frames, threads).
    #[serde(flatten)]
    pub run: RunStats,
    /// Events processed by kind.
    pub events: EventCounts,
    /// Total events processed.
    pub events_total: u64,
    /// Events per wall second.
    pub events_per_second: f64,
    /// Most events in the event queue's heap at once, sampled after every event (with
    /// `speed.parking`, slab certificates beyond the next all-vertex event are not in it; the
    /// first sample, after the first event, still holds every initial certificate).
    pub queue_peak: usize,
    /// Mean number of events in the event queue's heap, sampled after every event.
    pub queue_mean: f64,
    /// Contact statistics, when contact is on.
    pub contact: Option<super::ContactStats>,
}
