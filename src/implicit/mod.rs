//! Implicit contact handling (Otaduy, Tamstorf, Steinemann and Gross 2009): large implicit
//! steps with position-level contact constraints, on the same elastic model and scene as ACM
//! and the synchronous baseline ([`crate::sync`]), for side-by-side comparison.
//!
//! A step from `t` to `t + h` (the paper's §4):
//! 1. the linearized backward-Euler system `A v = b` (`system`) and its unconstrained
//!    solution `v*` (`cg`);
//! 2. constraints from the pairs closer than `delta` at the start (`contacts`);
//! 3. **constraint manifold refinement**: solve the contact problem (`ica`), run continuous
//!    collision detection on the tentative motion `x + s h v`, add the collisions as new
//!    constraints, repeat, at most `max_cmr_iterations` times;
//! 4. when that does not converge, the step is redone as two halves (at most `max_halvings`
//!    deep); at the finest level the synchronous baseline's fail-safe (rigid impact zones,
//!    starting from the unconstrained velocities `v*`) resolves what remains, counted in the
//!    statistics;
//! 5. every vertex drifts to `x + h v`.
//!
//! Scripted vertices get the average velocity of their script over the step, as in the
//! synchronous baseline. Frames, energy and the audit are shared with it (`crate::sync::steps`).
//! The method has no guarantee: the fail-safe can fail (two scripted objects pinching one
//! another through the cloth); the run then stops before the step.

pub(crate) mod cg;
pub(crate) mod contacts;
#[cfg(test)]
mod dense;
pub(crate) mod ica;
pub(crate) mod matrix;
pub(crate) mod system;

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use glam::DVec3;
use hashbrown::HashMap;
use serde::Serialize;

use crate::scene::{FailSafe, ImplicitSettings, Method, Scene, SceneError};
use crate::sync::filter::{Filter, FilterParams, FilterStats};
use crate::sync::primitives::Feature;
use crate::sync::steps::{self, FixedStepper, FixedSteps, Progress};
use crate::{FrameSink, FrameSource, Model, RunError, RunStats, Stepper};
use contacts::Detector;
use ica::{ContactRow, IcaParams};
use system::{Forces, LinearSystem};

/// The default step (s) when the profile sets none (capped by the frame interval).
const DEFAULT_STEP: f64 = 0.01;

/// Conjugate-gradient iterations allowed per unconstrained solve, per free vertex.
const CG_ITERATIONS_PER_VERTEX: usize = 2;

/// What an implicit run did; written as `stats.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ImplicitStats {
    /// `"implicit"`.
    pub integrator: &'static str,
    /// The step `h` (s) before any halving.
    pub step: f64,
    /// Safety distance `delta` (cm).
    pub delta: f64,
    /// Friction coefficient of the pyramid.
    pub friction: f64,
    /// Steps of length `h` taken.
    pub steps: u64,
    /// Sub-steps accepted (a step halved once is two sub-steps).
    pub substeps: u64,
    /// Times a (sub-)step was halved because refinement did not converge.
    pub halvings: u64,
    /// Per count of refinement iterations `k` (entry `k - 1`), the sub-steps that were
    /// collision-free after `k` iterations.
    pub cmr_iterations: Vec<u64>,
    /// Sub-steps at the finest level that needed the fail-safe.
    pub failsafe_steps: u64,
    /// The fail-safe's counters.
    pub failsafe: FilterStats,
    /// Contact solves.
    pub ica_solves: u64,
    /// Outer iterations, summed over solves.
    pub ica_outer_iterations: u64,
    /// Inner projected Gauss-Seidel sweeps, summed over solves.
    pub ica_sweeps: u64,
    /// Solves that stopped at `max_ica_iterations` before the termination rule held.
    pub ica_unconverged: u64,
    /// Conjugate-gradient iterations of the unconstrained solves.
    pub cg_iterations: u64,
    /// Largest relative residual an unconstrained solve ended with.
    pub cg_worst_residual: f64,
    /// Contact constraints, summed over the last solve of each sub-step.
    pub constraints: u64,
    /// Most constraints in one sub-step.
    pub most_constraints: u64,
    /// Wall-clock time spent on contact (detection and solves), part of `wall_seconds`.
    pub contact_seconds: f64,
    /// The common statistics (model size, wall and simulated time, frames, threads); event
    /// counts stay zero.
    #[serde(flatten)]
    pub run: RunStats,
}

/// A scene run by the implicit integrator.
#[derive(Debug)]
pub struct ImplicitSimulation {
    /// What is simulated.
    model: Model,
    system: LinearSystem,
    detector: Detector,
    settings: ImplicitSettings,
    friction: f64,
    progress: Progress,
    script_origin: Vec<(u32, usize, DVec3)>,
    /// Multipliers of the last accepted sub-step, by feature (warm starts).
    warm: HashMap<Feature, (f64, [f64; 2])>,
    /// Set from outside to stop the run between two steps.
    stop: Option<&'static AtomicBool>,
    stats: ImplicitStats,
}

impl ImplicitSimulation {
    /// Builds the implicit simulation of `scene` (validated first). `delta` defaults to
    /// `contact.eta1`, friction to `contact.friction`.
    pub fn new(scene: &Scene) -> Result<Self, SceneError> {
        let mut model_scene = scene.clone();
        // No penalty layers (the constraints handle collisions); as an implicit scene it is
        // still checked to start intersection-free.
        model_scene.contact.enabled = false;
        model_scene.integrator.method = Method::Implicit;
        let model = Model::build(&mut std::borrow::Cow::Owned(model_scene))?;
        let s = scene.implicit;
        let requested = s.step.unwrap_or(DEFAULT_STEP.min(scene.frame_interval));
        let clock = FixedSteps::new(scene.frame_interval, requested, "implicit.step")?;
        let delta = s.delta.unwrap_or(scene.contact.eta1);
        let friction = s.friction.unwrap_or(scene.contact.friction);
        let shortest = shortest_edge(&model.triangles, &model.state.x);
        if delta >= shortest {
            return Err(SceneError::new(
                if s.delta.is_some() {
                    "implicit.delta"
                } else {
                    "contact.eta1"
                },
                format!(
                    "the safety distance {delta} cm is not below the shortest edge ({shortest:.3e} \
                     cm): triangles near each other on one mesh would start as contacts; set a \
                     smaller implicit.delta"
                ),
            ));
        }
        let detector = Detector::new(&model.triangles, model.state.len(), delta);
        let script_origin = steps::script_origins(&model.scripts, &model.state.x);
        let system = LinearSystem::new(&forces_of(&model), &model.state.inv_mass);
        let stats = ImplicitStats {
            integrator: "implicit",
            step: clock.step(),
            delta,
            friction,
            cmr_iterations: vec![0; s.max_cmr_iterations as usize],
            run: RunStats::of(&model),
            ..ImplicitStats::default()
        };
        Ok(Self {
            model,
            system,
            detector,
            settings: s,
            friction,
            progress: Progress::new(clock),
            script_origin,
            warm: HashMap::new(),
            stop: None,
            stats,
        })
    }

    /// The step `h` (s) before any halving.
    pub(crate) fn step(&self) -> f64 {
        self.progress.clock.step()
    }

    /// Statistics so far: the solver's counters and the common ones.
    pub fn stats(&self) -> &ImplicitStats {
        &self.stats
    }

    /// One (sub-)step from `t` to `t_next`, `depth` halvings deep.
    fn advance(&mut self, t: f64, t_next: f64, depth: u32) -> Result<(), RunError> {
        let h = t_next - t;
        let saved = (self.model.state.x.clone(), self.model.state.v.clone());
        let v_star = self.unconstrained(t, t_next);
        // The positions at `t` (scripts applied) and the masses, owned while `self` changes.
        let state = &self.model.state;
        let (x, mass, inv_mass) = (state.x.clone(), state.mass.clone(), state.inv_mass.clone());
        let contact_started = Instant::now();
        let refined = self.refine(&x, &v_star, &inv_mass, h);
        self.stats.contact_seconds += contact_started.elapsed().as_secs_f64();
        let v = match refined {
            Some(v) => v,
            None if depth < self.settings.max_halvings => {
                let state = &mut self.model.state;
                (state.x, state.v) = saved;
                self.stats.halvings += 1;
                let mid = t + 0.5 * h;
                self.advance(t, mid, depth + 1)?;
                return self.advance(mid, t_next, depth + 1);
            }
            None => {
                let mut v = v_star;
                self.fail_safe(&x, &mut v, (&mass, &inv_mass), (t, h, depth))?;
                v
            }
        };
        let state = &mut self.model.state;
        state.v = v;
        for ((x, ti), v) in state.x.iter_mut().zip(&mut state.t).zip(&state.v) {
            *x += h * *v;
            *ti = t_next;
        }
        self.stats.substeps += 1;
        Ok(())
    }

    /// Applies the scripts for the step from `t` to `t_next`, assembles the linearized system
    /// and returns its unconstrained solution `v*`.
    fn unconstrained(&mut self, t: f64, t_next: f64) -> Vec<DVec3> {
        let h = t_next - t;
        let model = &mut self.model;
        steps::apply_scripts(
            &self.script_origin,
            &model.scripts,
            (t, t_next, h),
            &mut model.state.x,
            &mut model.state.v,
        );
        let forces = forces_of(model);
        let state = &model.state;
        self.system
            .assemble(&forces, (&state.x, &state.v, &state.mass), t, h);
        let mut v_star = state.v.clone();
        let free = self.system.free.iter().filter(|&&f| f).count();
        let report = cg::solve(
            &self.system.matrix,
            &self.system.rhs,
            &self.system.free,
            &mut v_star,
            self.settings.cg_tolerance,
            u32::try_from(CG_ITERATIONS_PER_VERTEX * free.max(1)).unwrap_or(u32::MAX),
        );
        self.stats.cg_iterations += u64::from(report.iterations);
        self.stats.cg_worst_residual = self.stats.cg_worst_residual.max(report.relative_residual);
        v_star
    }

    /// Constraint manifold refinement from positions `x` and unconstrained velocities
    /// `v_star`: the constrained velocities if they are collision-free within
    /// `max_cmr_iterations`, else `None`.
    fn refine(
        &mut self,
        x: &[DVec3],
        v_star: &[DVec3],
        inv_mass: &[f64],
        h: f64,
    ) -> Option<Vec<DVec3>> {
        let (delta, mu) = (self.detector.delta(), self.friction);
        let params = IcaParams {
            max_outer: self.settings.max_ica_iterations,
            max_sweeps: self.settings.max_pgs_sweeps,
            tolerance: self.settings.ica_tolerance,
            slack: 0.5 * delta / h,
        };
        let candidates = self.detector.candidates(x, v_star, h, inv_mass);
        let mut features = Vec::new();
        let mut rows: Vec<ContactRow> = Vec::new();
        for c in self.detector.proximity(&candidates, x, v_star, h) {
            let mut row = self.detector.row(&c, x, v_star, h, mu);
            if let Some(&(lambda, gamma)) = self.warm.get(&c.feature) {
                (row.lambda, row.gamma) = (lambda, gamma);
            }
            features.push(c.feature);
            rows.push(row);
        }
        let mut dv = vec![DVec3::ZERO; x.len()];
        let mut v = v_star.to_vec();
        for iteration in 0..self.settings.max_cmr_iterations as usize {
            if !rows.is_empty() {
                let report = ica::solve(
                    &self.system.matrix,
                    &self.system.free,
                    v_star,
                    &mut rows,
                    &mut dv,
                    params,
                );
                self.stats.ica_solves += 1;
                self.stats.ica_outer_iterations += u64::from(report.outer);
                self.stats.ica_sweeps += u64::from(report.sweeps);
                self.stats.ica_unconverged += u64::from(!report.converged);
                for ((vi, &s), &d) in v.iter_mut().zip(v_star).zip(&dv) {
                    *vi = s + d;
                }
            }
            let candidates = self.detector.candidates(x, &v, h, inv_mass);
            let hits = self.detector.collisions(&candidates, x, &v, h);
            if hits.is_empty() {
                self.stats.cmr_iterations[iteration] += 1;
                self.stats.constraints += rows.len() as u64;
                self.stats.most_constraints = self.stats.most_constraints.max(rows.len() as u64);
                self.warm.clear();
                for (f, r) in features.iter().zip(&rows) {
                    self.warm.entry(*f).or_insert((r.lambda, r.gamma));
                }
                return Some(v);
            }
            for c in &hits {
                features.push(c.feature);
                rows.push(self.detector.row(c, x, v_star, h, mu));
            }
        }
        None
    }

    /// The fail-safe of the synchronous baseline (rigid impact zones) on the motion `x + s h v`.
    fn fail_safe(
        &mut self,
        x: &[DVec3],
        v: &mut [DVec3],
        (mass, inv_mass): (&[f64], &[f64]),
        (t, h, depth): (f64, f64, u32),
    ) -> Result<(), RunError> {
        self.stats.failsafe_steps += 1;
        let params = FilterParams {
            step: h,
            thickness: self.detector.delta(),
            stiffness: 0.0,
            friction: self.friction,
            max_ccd_iterations: 0,
            max_failsafe_iterations: 100,
            failsafe: FailSafe::ImpactZones,
        };
        let mut filter = Filter::new(&self.model.triangles, v.len(), params);
        filter
            .fail_safe(x, v, mass, inv_mass, &mut self.stats.failsafe)
            .map_err(|u| RunError::Unresolved {
                method: "implicit",
                time: t,
                step: format!("a step of {h:e} s after {depth} halving(s) and the fail-safe"),
                collisions: u.collisions,
                first: format!("{:?} {:?}", u.first.kind, u.first.verts),
                reason: u.reason,
                advice: "A smaller implicit.step or more implicit.max_halvings may get further",
            })
    }
}

impl FrameSource for ImplicitSimulation {
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

impl Stepper for ImplicitSimulation {
    fn method(&self) -> Method {
        Method::Implicit
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
        let s = &self.stats;
        format!(
            "{} implicit steps of {:.3e} s, {} sub-steps ({} halvings), {:.2} s wall, {:.2} s on \
             contact; CMR iterations per sub-step (1, 2, ...): {:?}; fail-safe in {} sub-steps; \
             {} ICA solves, {} outer iterations, {} unconverged",
            s.steps,
            s.step,
            s.substeps,
            s.halvings,
            s.run.wall_seconds,
            s.contact_seconds,
            s.cmr_iterations,
            s.failsafe_steps,
            s.ica_solves,
            s.ica_outer_iterations,
            s.ica_unconverged
        )
    }
}

impl FixedStepper for ImplicitSimulation {
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

    fn take_step(&mut self, t: f64, t_next: f64) -> Result<(), RunError> {
        self.advance(t, t_next, 0)
    }
}

/// The length of the shortest edge of `triangles` at positions `x` (infinite without any).
fn shortest_edge(triangles: &[[u32; 3]], x: &[DVec3]) -> f64 {
    triangles
        .iter()
        .flat_map(|t| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])])
        .map(|(a, b)| x[a as usize].distance(x[b as usize]))
        .fold(f64::INFINITY, f64::min)
}

/// The forces of `model`, as the linearized system reads them.
fn forces_of(model: &Model) -> Forces<'_> {
    Forces {
        springs: &model.springs.kernel,
        hinges: &model.hinges.kernel,
        drag: &model.drag,
        prescribed: &model.prescribed,
        gravity: model.gravity,
    }
}
