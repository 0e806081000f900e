//! The synchronous baseline (thesis ch. 3): one fixed step for every force, then the velocity
//! filter of Bridson, Fedkiw and Anderson (2002) with a fail-safe (rigid impact zones or
//! inelastic projection), on the same elastic model and scene as ACM, for side-by-side
//! comparison.
//!
//! A step from `t_n` to `t_n + h` (thesis Alg. 1) is symplectic Euler: every elastic element,
//! gravity, drag and prescribed force kicks the velocities with its impulse over `h` at the
//! positions of `t_n` (the same kernels as ACM, i.e. ACM with every clock equal to `h`);
//! scripted vertices get the average velocity of their script over the step (so their
//! positions at step ends are exact); the filter ([`filter`]) makes the linear motion over the
//! step collision-free; then every vertex drifts. Frames are written at step ends: the step is
//! the largest that divides the frame interval and is at most the requested one.
//!
//! Unlike ACM the method has no guarantee: the fail-safe can fail (two immovable objects in one
//! rigid impact zone, or a projection that does not converge). Such a step is reported, and
//! either stops the run before it is taken or is taken and counted (`sync.on_unresolved`).

pub(crate) mod broad;
pub mod ccd;
pub mod compare;
pub mod constraint;
pub mod filter;
pub mod primitives;
pub mod projection;
pub mod steps;
pub mod zones;

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use glam::DVec3;
use serde::Serialize;

use crate::engine::{FrameSink, RunError, Simulation, Stats};
use crate::forces::external::gravity_tick;
use crate::scene::{FailSafe, Method, OnUnresolved, Scene, SceneError};
use filter::{Filter, FilterParams, FilterStats};
use steps::{FixedSteps, Progress, Stepper};

/// Why a synchronous run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The same failures as an ACM run (divergence, output).
    #[error(transparent)]
    Run(#[from] RunError),
    /// The fail-safe could not make a step collision-free (`sync.on_unresolved = "stop"`).
    #[error(
        "the synchronous method failed at t = {time} s: {collisions} collision(s) remain in the \
         step, starting with {first}; {reason}. The step was not taken, so no frame intersects. \
         A smaller sync.step, a larger sync.thickness or sync.failsafe = \"inelastic_projection\" \
         may get further; sync.on_unresolved = \"continue\" takes the step anyway"
    )]
    Unresolved {
        /// Start of the step.
        time: f64,
        /// Collisions left.
        collisions: usize,
        /// The first of them, described.
        first: String,
        /// Why the fail-safe gave up.
        reason: String,
    },
}

/// What a synchronous run did; written as `stats.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SyncStats {
    /// `"sync"`.
    pub integrator: &'static str,
    /// The step `h` used (s).
    pub step: f64,
    /// Steps taken.
    pub steps: u64,
    /// Proximity thickness (cm).
    pub thickness: f64,
    /// The fail-safe, as named in profiles.
    pub failsafe: &'static str,
    /// Wall-clock time spent in the velocity filter (s), part of `wall_seconds`.
    pub filter_seconds: f64,
    /// Filter counters.
    pub filter: FilterStats,
    /// The common statistics (model size, wall and simulated time, frames, threads); event
    /// counts stay zero.
    #[serde(flatten)]
    pub run: Stats,
}

/// A scene run by the synchronous integrator.
#[derive(Debug)]
pub struct SyncSimulation {
    /// The model (state, elastic families, external forces) and what frame sinks read; its own
    /// event loop is never run, and its contact subsystem is off.
    sim: Simulation,
    filter: Filter,
    gravity: DVec3,
    progress: Progress,
    /// Per scripted vertex: its index, script and position at time 0.
    script_origin: Vec<(u32, usize, DVec3)>,
    on_unresolved: OnUnresolved,
    stats: SyncStats,
}

impl SyncSimulation {
    /// Builds the synchronous simulation of `scene` (validated first). The scene's contact
    /// settings supply the defaults of the `sync` parameters (thickness from `eta1`,
    /// stiffness from `r1`, friction).
    pub fn new(scene: &Scene) -> Result<Self, SceneError> {
        let mut model = scene.clone();
        // The model's own contact stays off (the filter handles collisions); as a synchronous
        // scene it is still checked to start intersection-free.
        model.contact.enabled = false;
        model.integrator.method = Method::Sync;
        let mut sim = Simulation::new(&model)?;
        let s = scene.sync;
        let requested = s.step.unwrap_or(sim.stats().clocks.external);
        let clock = FixedSteps::new(scene.frame_interval, requested, "sync.step")?;
        let step = clock.step();
        let params = FilterParams {
            step,
            thickness: s.thickness.unwrap_or(scene.contact.eta1),
            stiffness: s.stiffness.unwrap_or(scene.contact.r1),
            friction: s.friction.unwrap_or(scene.contact.friction),
            max_ccd_iterations: s.max_ccd_iterations,
            max_failsafe_iterations: s.max_failsafe_iterations,
            failsafe: s.failsafe,
        };
        let model = sim.model_mut();
        let script_origin = steps::script_origins(model.scripts, &model.state.x);
        let filter = Filter::new(sim.triangles(), sim.state().len(), params);
        let stats = SyncStats {
            integrator: "sync",
            step,
            thickness: params.thickness,
            failsafe: match params.failsafe {
                FailSafe::ImpactZones => "impact_zones",
                FailSafe::InelasticProjection => "inelastic_projection",
            },
            run: sim.stats().clone(),
            ..SyncStats::default()
        };
        Ok(Self {
            sim,
            filter,
            gravity: scene.gravity,
            progress: Progress::new(clock),
            script_origin,
            on_unresolved: s.on_unresolved,
            stats,
        })
    }

    /// The model, as frame sinks see it.
    pub fn simulation(&self) -> &Simulation {
        &self.sim
    }

    /// The step `h` (s).
    pub fn step(&self) -> f64 {
        self.progress.clock.step()
    }

    /// The current simulated time: the end of the last step taken.
    pub fn time(&self) -> f64 {
        self.progress.time()
    }

    /// Statistics so far.
    pub fn stats(&self) -> &SyncStats {
        &self.stats
    }

    /// Stops [`Self::run_until`] between two steps once `flag` is set (see
    /// [`Simulation::stop_when`]).
    pub fn stop_when(&mut self, flag: &'static AtomicBool) {
        self.sim.stop_when(flag);
    }

    /// Takes steps while their end is at most `until`, handing frames (at step ends that are
    /// frame times, and at time 0) to `sink`.
    pub fn run_until(&mut self, until: f64, sink: &mut dyn FrameSink) -> Result<(), SyncError> {
        steps::run_until(self, until, sink)
    }
}

impl Stepper for SyncSimulation {
    type Error = SyncError;

    fn simulation(&self) -> &Simulation {
        &self.sim
    }

    fn run_stats(&mut self) -> &mut Stats {
        &mut self.stats.run
    }

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn record_steps(&mut self, steps: u64) {
        self.stats.steps = steps;
    }

    /// One step: kick, script, filter, drift.
    fn take_step(&mut self, t: f64, t_next: f64) -> Result<(), SyncError> {
        let h = self.progress.clock.step();
        let model = self.sim.model_mut();
        let state = model.state;
        model.springs.tick_all(t, h, state);
        model.hinges.tick_all(t, h, state);
        gravity_tick(state, self.gravity, t, h);
        if !model.drag.is_empty() {
            model.drag.tick(state, t);
        }
        for f in model.prescribed {
            f.tick(state, t, h);
        }
        steps::apply_scripts(
            &self.script_origin,
            model.scripts,
            (t, t_next, h),
            &mut state.x,
            &mut state.v,
        );
        let filter_started = Instant::now();
        let result = self.filter.apply(
            &state.x,
            &mut state.v,
            &state.mass,
            &state.inv_mass,
            &mut self.stats.filter,
        );
        self.stats.filter_seconds += filter_started.elapsed().as_secs_f64();
        if let Err(u) = result {
            if self.on_unresolved == OnUnresolved::Stop {
                return Err(SyncError::Unresolved {
                    time: t,
                    collisions: u.collisions,
                    first: format!("{:?} {:?}", u.first.kind, u.first.verts),
                    reason: u.reason,
                });
            }
        }
        for ((x, ti), v) in state.x.iter_mut().zip(&mut state.t).zip(&state.v) {
            *x += h * *v;
            *ti = t_next;
        }
        Ok(())
    }
}
