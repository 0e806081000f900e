//! One interface for every method: a [`Stepper`] advances its [`Model`] through time and hands
//! [`Frame`]s to a [`FrameSink`], showing itself to them as a [`FrameSource`]. ACM's event loop
//! ([`crate::Simulation`]), the synchronous velocity filter ([`crate::sync::SyncSimulation`]),
//! implicit contact ([`crate::implicit::ImplicitSimulation`]) and optimization-based animation
//! of rigid bodies ([`crate::rigid::ObaSimulation`]) implement it, so the command line, `acm compare` and
//! the Python module drive any of them the same way ([`crate::driver`] builds the one a scene
//! asks for).

use std::sync::atomic::AtomicBool;

use glam::DVec3;

use crate::check::Conservation;
use crate::scene::Method;
use crate::{Model, RunError, RunStats};

/// A method that advances a model through time (see the module docs). What it shows of itself
/// while it runs (its model, its contact) is its [`FrameSource`] side.
pub trait Stepper: FrameSource {
    /// Which method this is.
    fn method(&self) -> Method;

    /// Advances to `until` (s), handing every frame due on the way to `sink`.
    ///
    /// # Errors
    ///
    /// Why the run stopped early ([`RunError`]): the state left what the method can resolve,
    /// a guarantee would break, the stop flag was set ([`Self::stop_when`]), or the sink failed.
    fn run_until(&mut self, until: f64, sink: &mut dyn FrameSink) -> Result<(), RunError>;

    /// Stops [`Self::run_until`] between two events or steps, with [`RunError::Interrupted`],
    /// once `flag` is set (for example by a signal handler).
    fn stop_when(&mut self, flag: &'static AtomicBool);

    /// Everything the method counts, as written to `stats.json`.
    fn stats_json(&self) -> serde_json::Value;

    /// What the run did, in one line (steps or events, time spent), for the command line.
    fn summary(&self) -> String;
}

/// What a method shows of itself to the sinks of its frames, and to anyone reading it between
/// runs: its model, its time and statistics, its clocks and its contact.
pub trait FrameSource: std::fmt::Debug + Send {
    /// The model it advances.
    fn model(&self) -> &Model;

    /// The simulated time reached: everything before it is done.
    fn time(&self) -> f64;

    /// The statistics every method keeps (model size, wall and simulated time, frames).
    fn run_stats(&self) -> &RunStats;

    /// Units of work done so far (events, or steps), live while a run goes on: for progress
    /// reports.
    fn work_done(&self) -> u64;

    /// Writes each vertex's time step now into `out`: the finest clock acting on it, infinite
    /// for a vertex no force moves.
    fn vertex_steps(&self, out: &mut Vec<f64>);

    /// Energy held by contact potentials at `positions` (ACM's penalty layers); zero for a
    /// method whose contact holds none.
    fn contact_energy(&self, _positions: &[DVec3]) -> f64 {
        0.0
    }

    /// Energies and momenta measured from rigid bodies rather than from the vertex state, for a
    /// method whose vertices only show its bodies' surfaces (optimization-based animation);
    /// `None` for the others.
    fn body_conservation(&self, _time: f64) -> Option<Conservation> {
        None
    }

    /// The mass gravity accelerates (g): the free vertices' (those with `inv_mass > 0`), or
    /// a rigid-body method's dynamic bodies'.
    fn free_mass(&self) -> f64 {
        let state = self.model().state();
        let masses = state.mass.iter().zip(&state.inv_mass);
        masses.filter(|(_, &w)| w > 0.0).map(|(&m, _)| m).sum()
    }

    /// Penalty contact now (ACM's active layers); none for other methods.
    fn penalty_now(&self) -> PenaltyNow {
        PenaltyNow::default()
    }
}

/// Penalty contact at one moment (see [`FrameSource::penalty_now`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PenaltyNow {
    /// Candidate pairs with at least one penalty layer active.
    pub active_pairs: usize,
    /// The deepest layer active in any pair (0: none).
    pub deepest_layer: u32,
}

/// A frame handed to a [`FrameSink`]: positions of every vertex at the frame time.
#[derive(Debug)]
pub struct Frame<'a> {
    /// Frame number, from 0.
    pub index: u64,
    /// Simulated time (s).
    pub time: f64,
    /// Global vertex positions at `time`.
    pub positions: &'a [DVec3],
    /// The method that made it, for reading anything else: its model (velocities, topology),
    /// its statistics, its contact.
    pub source: &'a dyn FrameSource,
}

impl Frame<'_> {
    /// The model the frame shows.
    pub fn model(&self) -> &Model {
        self.source.model()
    }
}

/// Receives frames as a method reaches them (file writers, progress, analysis).
pub trait FrameSink {
    /// Handles one frame.
    ///
    /// # Errors
    ///
    /// Whatever stops the run (a full disk: [`RunError::Output`]).
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError>;
}

/// A sink that ignores frames.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoFrames;

impl FrameSink for NoFrames {
    fn frame(&mut self, _frame: &Frame<'_>) -> Result<(), RunError> {
        Ok(())
    }
}
