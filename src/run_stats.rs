//! What every method's run reports, whatever the method: the model's size and clocks, the
//! simulated and wall time, the frames and threads (the common part of each `stats.json`).

use serde::Serialize;

use crate::model::{Clocks, Model, ModelSize};

/// The statistics every method keeps (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunStats {
    /// Scene name.
    pub scene: String,
    /// Model size.
    pub model: ModelSize,
    /// Force clocks.
    pub clocks: Clocks,
    /// Simulated time reached (s).
    pub simulated_seconds: f64,
    /// Wall-clock time spent running (s).
    pub wall_seconds: f64,
    /// Frames handed to the output.
    pub frames: u64,
    /// Worker threads of the pool the run used.
    pub threads: usize,
    /// The run was stopped from outside (a signal) before the time it was asked to reach.
    pub interrupted: bool,
}

impl RunStats {
    /// The statistics of a run of `model` that has not started.
    pub(crate) fn of(model: &Model) -> Self {
        Self {
            scene: model.name.clone(),
            model: model.size,
            clocks: model.clocks,
            ..Self::default()
        }
    }
}
