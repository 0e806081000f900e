//! What one step of the loop reports ([`crate::Simulation::step`]).

use crate::events::EventKind;

/// One processed event, as [`Simulation::step`](crate::Simulation::step) reports it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Processed {
    /// Its time (s).
    pub time: f64,
    /// What it was.
    pub kind: EventKind,
    /// Its subsystem's index: the force for `Force`, the pair for `Certificate`, the layer for
    /// `Penalty` (with `speed.layer_super_events` off: the pair-layer group), the script for
    /// `Script`.
    pub payload: u32,
}
