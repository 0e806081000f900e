//! What a model holds, in numbers: its size and its force clocks (reported in `stats.json` and
//! by `acm info`).

use serde::Serialize;

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
    pub(crate) fn of(clocks: &[f64]) -> Option<Self> {
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
    /// Gravity's clock: `external`, or with `speed.clock_bins` the median vertex's elastic step;
    /// with contact (and no `integrator.clock`), no coarser than the clock of the deepest layer
    /// a free vertex rests in under its weight.
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
