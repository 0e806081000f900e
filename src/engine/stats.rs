//! Run statistics: cheap counters, always on.

use serde::Serialize;

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

/// The smallest and largest clock of a force family, when it has elements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ClockRange {
    /// Smallest clock (s).
    pub min: f64,
    /// Largest clock (s).
    pub max: f64,
}

impl ClockRange {
    /// The range of `clocks`, or `None` when empty.
    pub fn of(clocks: &[f64]) -> Option<Self> {
        let min = clocks.iter().copied().reduce(f64::min)?;
        let max = clocks.iter().copied().reduce(f64::max)?;
        Some(Self { min, max })
    }
}

/// Clocks of every force family.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Clocks {
    /// Stretching element clocks.
    pub stretching: Option<ClockRange>,
    /// Bending element clocks.
    pub bending: Option<ClockRange>,
    /// The clock of prescribed forces and drag (the elastic minimum, or a pace per frame),
    /// and the synchronous baseline's default step.
    pub external: f64,
    /// Gravity's clock: `external`, or with `speed.clock_bins` the median vertex's elastic step.
    pub gravity: f64,
}

/// Size of the simulated model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ModelSize {
    /// Vertices over all objects.
    pub vertices: usize,
    /// Of which free (moved by forces).
    pub free_vertices: usize,
    /// Triangles over all objects.
    pub triangles: usize,
    /// Edge springs.
    pub springs: usize,
    /// Bending hinges.
    pub hinges: usize,
    /// Force events on the queue (super-elements count once).
    pub force_events: usize,
}

/// What a run did; written as `stats.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Scene name.
    pub scene: String,
    /// Model size.
    pub model: ModelSize,
    /// Force clocks.
    pub clocks: Clocks,
    /// Simulated time reached (s).
    pub simulated_seconds: f64,
    /// Wall-clock time spent in the event loop (s).
    pub wall_seconds: f64,
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
    /// Frames handed to the output.
    pub frames: u64,
    /// Worker threads of the pool the run used.
    pub threads: usize,
    /// The run was stopped from outside (Ctrl-C) before the time it was asked to reach.
    pub interrupted: bool,
    /// Contact statistics, when contact is on.
    pub contact: Option<super::ContactStats>,
}
