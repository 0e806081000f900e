//! The synchronous baseline (thesis ch. 3): one fixed step for every force, then the velocity
//! filter of Bridson, Fedkiw and Anderson (2002) with a fail-safe (rigid impact zones or
//! inelastic projection), on the same elastic model and scene as ACM, for side-by-side
//! comparison.
//!
//! A step from `t_n` to `t_n + h` (thesis Alg. 1) is symplectic Euler: every elastic element,
//! gravity, drag and prescribed force kicks the velocities with its impulse over `h` at the
//! positions of `t_n` (the same kernels as ACM, i.e. ACM with every clock equal to `h`);
//! scripted vertices get the average velocity of their script over the step (so their
//! positions at step ends are exact); the filter (`filter`) makes the linear motion over the
//! step collision-free; then every vertex drifts. Frames are written at step ends: the step is
//! the largest that divides the frame interval and is at most the requested one.
//!
//! Unlike ACM the method has no guarantee: the fail-safe can fail (two immovable objects in one
//! rigid impact zone, or a projection that does not converge). Such a step is reported, and
//! either stops the run before it is taken or is taken and counted (`sync.on_unresolved`).

pub(crate) mod broad;
pub(crate) mod ccd;
#[cfg(test)]
mod ccd_against_substeps;
pub(crate) mod constraint;
pub(crate) mod filter;
pub(crate) mod primitives;
pub(crate) mod projection;
pub(crate) mod steps;
pub(crate) mod zones;

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use glam::DVec3;
use serde::Serialize;

use crate::forces::external::gravity_tick;
use crate::scene::{FailSafe, Method, OnUnresolved, Scene, SceneError};
use crate::{FrameSink, FrameSource, Model, RunError, RunStats, Stepper};
use filter::{Filter, FilterParams, FilterStats};
use steps::{FixedStepper, FixedSteps, Progress};

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
    pub run: RunStats,
}

/// A scene run by the synchronous integrator.
#[derive(Debug)]
pub struct SyncSimulation {
    /// What is simulated.
    model: Model,
    filter: Filter,
    progress: Progress,
    /// Per scripted vertex: its index, script and position at time 0.
    script_origin: Vec<(u32, usize, DVec3)>,
    on_unresolved: OnUnresolved,
    /// Set from outside to stop the run between two steps.
    stop: Option<&'static AtomicBool>,
    stats: SyncStats,
}

impl SyncSimulation {
    /// Builds the synchronous simulation of `scene` (validated first). The scene's contact
    /// settings supply the defaults of the `sync` parameters (thickness from `eta1`,
    /// stiffness from `r1`, friction).
    pub fn new(scene: &Scene) -> Result<Self, SceneError> {
        let mut model_scene = scene.clone();
        // No penalty layers (the filter handles collisions); as a synchronous scene it is
        // still checked to start intersection-free.
        model_scene.contact.enabled = false;
        model_scene.integrator.method = Method::Sync;
        let model = Model::build(&mut std::borrow::Cow::Owned(model_scene))?;
        let s = scene.sync;
        let requested = s.step.unwrap_or(model.clocks.external);
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
        let script_origin = steps::script_origins(&model.scripts, &model.state.x);
        let filter = Filter::new(&model.triangles, model.state.len(), params);
        let stats = SyncStats {
            integrator: "sync",
            step,
            thickness: params.thickness,
            failsafe: match params.failsafe {
                FailSafe::ImpactZones => "impact_zones",
                FailSafe::InelasticProjection => "inelastic_projection",
            },
            run: RunStats::of(&model),
            ..SyncStats::default()
        };
        Ok(Self {
            model,
            filter,
            progress: Progress::new(clock),
            script_origin,
            on_unresolved: s.on_unresolved,
            stop: None,
            stats,
        })
    }

    /// The step `h` (s).
    pub fn step(&self) -> f64 {
        self.progress.clock.step()
    }

    /// Statistics so far: the filter's counters and the common ones.
    pub fn stats(&self) -> &SyncStats {
        &self.stats
    }
}

impl FrameSource for SyncSimulation {
    fn model(&self) -> &Model {
        &self.model
    }

    /// The end of the last step taken.
    fn time(&self) -> f64 {
        self.progress.time()
    }

    fn run_stats(&self) -> &RunStats {
        &self.stats.run
    }

    fn work_done(&self) -> u64 {
        self.progress.steps
    }

    fn vertex_steps(&self, out: &mut Vec<f64>) {
        steps::uniform_steps(&self.model, self.step(), out);
    }
}

impl Stepper for SyncSimulation {
    fn method(&self) -> Method {
        Method::Sync
    }

    /// Takes steps while their end is at most `until`, handing frames (at step ends that are
    /// frame times, and at time 0) to `sink`.
    fn run_until(&mut self, until: f64, sink: &mut dyn FrameSink) -> Result<(), RunError> {
        steps::run_until(self, until, sink)
    }

    fn stop_when(&mut self, flag: &'static AtomicBool) {
        self.stop = Some(flag);
    }

    fn stats_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.stats).expect("the statistics are plain data")
    }

    fn summary(&self) -> String {
        let (s, f) = (&self.stats, &self.stats.filter);
        format!(
            "{} synchronous steps of {:.3e} s, {:.2} s wall, {:.2} s in the velocity filter; \
             fail-safe in {} steps ({} rounds, largest zone {} vertices, {} rigid-zone \
             disagreements), {} unresolved steps",
            s.steps,
            s.step,
            s.run.wall_seconds,
            s.filter_seconds,
            f.failsafe_steps,
            f.failsafe_rounds,
            f.largest_zone,
            f.rigid_disagreements,
            f.unresolved_steps
        )
    }
}

impl FixedStepper for SyncSimulation {
    fn stop_requested(&self) -> bool {
        steps::requested(self.stop)
    }

    fn run_stats_mut(&mut self) -> &mut RunStats {
        &mut self.stats.run
    }

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn record_steps(&mut self, steps: u64) {
        self.stats.steps = steps;
    }

    /// One step: kick, script, filter, drift.
    fn take_step(&mut self, t: f64, t_next: f64) -> Result<(), RunError> {
        let h = self.progress.clock.step();
        let model = &mut self.model;
        let state = &mut model.state;
        model.springs.tick_all(t, h, state);
        model.hinges.tick_all(t, h, state);
        gravity_tick(state, model.gravity, t, h);
        if !model.drag.is_empty() {
            model.drag.tick(state, t);
        }
        for f in &model.prescribed {
            f.tick(state, t, h);
        }
        steps::apply_scripts(
            &self.script_origin,
            &model.scripts,
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
                return Err(RunError::Unresolved {
                    method: "synchronous",
                    time: t,
                    step: "the step".into(),
                    collisions: u.collisions,
                    first: format!("{:?} {:?}", u.first.kind, u.first.verts),
                    reason: u.reason,
                    advice: "A smaller sync.step, a larger sync.thickness or sync.failsafe = \
                             \"inelastic_projection\" may get further; sync.on_unresolved = \
                             \"continue\" takes the step anyway",
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
