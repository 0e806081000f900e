//! The driver of optimization-based animation: [`ObaSimulation`] owns the bodies and the
//! [`Model`] of their surfaces, and steps them ([`step::take`]) as every fixed-step method
//! does ([`crate::sync::steps`]).
//!
//! The model's objects are the bodies' surfaces, in body order, all fixed: after every step
//! each is posed by the same matrix products the collision vertices are, so the frame
//! writers, `acm check` and `acm compare` read an OBA run as any other run's, and audit
//! exactly the points the method kept apart. Energies and momenta come from the bodies
//! ([`FrameSource::body_conservation`]).

use std::borrow::Cow;
use std::sync::atomic::AtomicBool;

use glam::DVec3;

use super::body::Body;
use super::geometry::{separation, WorldPart};
use super::position::{Memory, Unfinished};
use super::stats::ObaStats;
use super::world::{Joint, World};
use super::{shells, step};
use crate::check::Conservation;
use crate::scene::rigid::{BodyMotion, BodyShape, BodySpec};
use crate::scene::{Method, Scene, SceneError};
use crate::sync::steps::{self, FixedStepper, FixedSteps, Progress};
use crate::{FrameSink, FrameSource, Model, RunError, RunStats, Stepper};

/// A scene of rigid bodies run by optimization-based animation.
#[derive(Debug)]
pub struct ObaSimulation {
    /// The bodies' surfaces (see the module docs).
    model: Model,
    bodies: Vec<Body>,
    world: World,
    gravity: DVec3,
    /// Per body, its first vertex in the model.
    first_vertex: Vec<usize>,
    progress: Progress,
    /// Steps taken (the run's copy of `progress` advances apart until the run returns).
    steps_taken: u64,
    /// Energies and momenta at every frame so far.
    energies: Vec<Conservation>,
    /// The last position update's pairs and multipliers, the next one's warm start.
    memory: Memory,
    /// Set from outside to stop the run between two steps, or between two QPs of a step's
    /// position update (the step is then undone).
    stop: Option<&'static AtomicBool>,
    stats: ObaStats,
}

impl ObaSimulation {
    /// Builds the simulation of `scene`'s bodies (validated first; deformable objects are
    /// refused: this method moves rigid bodies only).
    pub fn new(scene: &Scene) -> Result<Self, SceneError> {
        if let Some((i, o)) = scene.objects.iter().enumerate().next() {
            return Err(SceneError::new(
                format!("object[{i}]"),
                format!(
                    "integrator oba moves rigid bodies ([[body]]); {:?} is a deformable object: \
                     give it as a body or use another integrator",
                    o.name
                ),
            ));
        }
        scene.validate_fields()?;
        let rigid = &scene.rigid;
        let bodies: Vec<Body> = rigid.bodies.iter().map(Body::new).collect();
        let parts = bodies
            .iter()
            .enumerate()
            .flat_map(|(b, body)| (0..body.parts.len()).map(move |k| (b, k)))
            .collect();
        let joints = rigid
            .joints
            .iter()
            .map(|j| Joint {
                bodies: j.bodies,
                anchors: j.bodies.map(|b| {
                    let pose = bodies[b].pose;
                    pose.rotation.transpose() * (j.point - pose.position)
                }),
            })
            .collect();
        let world = World {
            parts,
            joints,
            settings: rigid.oba.clone(),
        };
        compound_parts_apart(&bodies, &rigid.bodies)?;
        // The model's objects are the bodies, in order: its errors name bodies.
        let model = Model::build(&mut Cow::Owned(shells::output_scene(scene, &bodies)))
            .map_err(|e| SceneError::new(e.path.replacen("object", "body", 1), e.message))?;
        let first_vertex = model
            .objects()
            .iter()
            .map(|o| o.first_vertex as usize)
            .collect();
        let requested = scene.frame_interval / f64::from(rigid.oba.steps_per_frame);
        let clock = FixedSteps::new(scene.frame_interval, requested, "oba.steps_per_frame")?;
        let stats = ObaStats::new(
            clock.step(),
            scene.frame_interval,
            bodies.len(),
            RunStats::of(&model),
        );
        let mut sim = Self {
            model,
            bodies,
            world,
            gravity: scene.gravity,
            first_vertex,
            progress: Progress::new(clock),
            steps_taken: 0,
            energies: Vec::new(),
            memory: Memory::default(),
            stop: None,
            stats,
        };
        sim.pose_model();
        sim.energies.push(sim.conservation(0.0));
        Ok(sim)
    }

    /// The bodies.
    pub fn bodies(&self) -> &[Body] {
        &self.bodies
    }

    /// Statistics so far.
    pub fn stats(&self) -> &ObaStats {
        &self.stats
    }

    /// Energies and momenta at every frame so far (the rows of `energy.csv`).
    pub fn energies(&self) -> &[Conservation] {
        &self.energies
    }

    /// What `acm info` prints for `scene` (this simulation's): its frames, the step and
    /// every body, one line each.
    pub fn describe(&self, scene: &Scene) -> String {
        let mut out = format!(
            "scene {:?}: {} s, frame every {} s ({} frames)\n  integrator: oba, {} bodies, \
             step {:.3e} s, {} joints\n",
            scene.name,
            scene.duration,
            scene.frame_interval,
            scene.frame_count(),
            self.bodies.len(),
            self.step(),
            self.world.joints.len()
        );
        for b in &self.bodies {
            let motion = match b.motion {
                BodyMotion::Dynamic => "dynamic",
                BodyMotion::Fixed => "fixed",
                BodyMotion::Scripted(_) => "scripted",
            };
            out += &format!(
                "  body {:?}: {motion}, mass {:.6} g, {} part(s)\n",
                b.name,
                b.mass,
                b.parts.len()
            );
        }
        out
    }

    /// The step (s).
    pub(crate) fn step(&self) -> f64 {
        self.progress.clock.step()
    }

    /// Energies and momenta of the dynamic bodies now, at time `time`.
    pub(crate) fn conservation(&self, time: f64) -> Conservation {
        let mut c = Conservation {
            time,
            ..Conservation::default()
        };
        for b in self.bodies.iter().filter(|b| b.is_dynamic()) {
            let x = b.pose.position;
            c.kinetic += b.kinetic_energy();
            c.gravity -= b.mass * self.gravity.dot(x);
            c.momentum += b.mass * b.velocity;
            c.angular_momentum +=
                x.cross(b.mass * b.velocity) + b.world_inertia() * b.angular_velocity;
        }
        c.total = c.kinetic + c.gravity;
        c
    }

    /// Writes every body's surface at its pose (and its points' velocities) into the model.
    fn pose_model(&mut self) {
        let state = &mut self.model.state;
        for (b, &first) in self.bodies.iter().zip(&self.first_vertex) {
            for (k, &p) in b.surface.0.iter().enumerate() {
                let x = b.pose.apply(p);
                state.x[first + k] = x;
                state.v[first + k] = b.point_velocity(x);
            }
        }
    }
}

impl FrameSource for ObaSimulation {
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

    /// The step for the vertices of dynamic bodies, infinite for the others.
    fn vertex_steps(&self, out: &mut Vec<f64>) {
        out.clear();
        out.resize(self.model.state.x.len(), f64::INFINITY);
        for (b, &first) in self.bodies.iter().zip(&self.first_vertex) {
            if b.is_dynamic() {
                out[first..first + b.surface.0.len()].fill(self.step());
            }
        }
    }

    fn body_conservation(&self, time: f64) -> Option<Conservation> {
        Some(self.conservation(time))
    }

    fn free_mass(&self) -> f64 {
        let dynamic = self.bodies.iter().filter(|b| b.is_dynamic());
        dynamic.map(|b| b.mass).sum()
    }
}

impl Stepper for ObaSimulation {
    fn method(&self) -> Method {
        Method::Oba
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
        let (s, f) = (&self.stats, &self.stats.per_frame);
        format!(
            "{} bodies, {} OBA steps of {:.3e} s, {:.2} s wall; per frame: {:.1} close pairs, \
             {:.1} collisions, {:.1} contacts, {:.2} position QPs, {:.2} QPs, {:.4} s; {} \
             rollbacks, {} fallbacks",
            s.bodies,
            s.steps,
            s.step,
            s.run.wall_seconds,
            f.close_pairs,
            f.collisions,
            f.contacts,
            f.position_qps,
            f.qps,
            f.seconds,
            s.totals.rollbacks,
            s.position_fallbacks
        )
    }
}

impl FixedStepper for ObaSimulation {
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
        self.stats.finish();
    }

    fn take_step(&mut self, t: f64, t_next: f64) -> Result<(), RunError> {
        let (gravity, world, flag) = (self.gravity, &self.world, self.stop);
        let stop = || steps::requested(flag);
        let taken = step::take(
            world,
            &mut self.bodies,
            &mut self.memory,
            gravity,
            (t, t_next),
            &stop,
        );
        let (record, stages) = match taken {
            Ok(taken) => taken,
            Err(Unfinished::Interrupted) => {
                self.stats.run.interrupted = true;
                return Err(RunError::Interrupted { time: t });
            }
            Err(Unfinished::Stuck(stuck)) => {
                return Err(RunError::Unresolved {
                    method: "optimization-based",
                    time: t,
                    step: "the step".into(),
                    collisions: 1,
                    first: format!("bodies {:?} and {:?}", stuck.a, stuck.b),
                    reason: format!(
                        "they overlap by {:.3e} cm at every configuration the position update \
                         reached, the start of the step included",
                        stuck.depth
                    ),
                    advice: "Prescribed motion (a scripted body) pushes one into the other: \
                             change the scripts so that the bodies it pushes have room to move",
                })
            }
        };
        self.stats.record(&record, stages);
        self.pose_model();
        self.steps_taken += 1;
        // The step that ends at a frame time: that frame's energies.
        if self.progress.clock.frame_at(self.steps_taken).is_some() {
            self.energies.push(self.conservation(t_next));
        }
        Ok(())
    }
}

/// Refuses compound bodies whose parts overlap or touch: their mass would count the overlap
/// twice and their frames would intersect themselves.
fn compound_parts_apart(bodies: &[Body], specs: &[BodySpec]) -> Result<(), SceneError> {
    for (i, (b, spec)) in bodies.iter().zip(specs).enumerate() {
        if !matches!(spec.shape, BodyShape::Compound { .. }) {
            continue;
        }
        let parts: Vec<WorldPart> = (0..b.parts.len())
            .map(|k| b.world_part(k, &b.pose))
            .collect();
        for p in 0..parts.len() {
            for q in p + 1..parts.len() {
                let d = separation(&parts[p], &parts[q]).distance;
                if d <= 0.0 {
                    return Err(SceneError::new(
                        format!("body[{i}].shape.parts[{q}]"),
                        format!(
                            "overlaps part {p} of body {:?} (separation {d:.3e} cm): the parts \
                             of a compound body must be apart",
                            b.name
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use glam::DQuat;

    use super::*;
    use crate::rigid::body::{rotation_between, Pose};
    use crate::scene::rigid::{Blast, ObaSettings, RigidScene, ShellMaterial};

    /// The stop flag of the interrupted run (no other test sets it).
    static STOP: AtomicBool = AtomicBool::new(false);

    /// Four cubes dropped on a floor in a column, pushed sideways by a blast in the seventh
    /// step: every step's position update solves QPs and remembers planes.
    fn column() -> Scene {
        let body = |name: &str, size: DVec3, y: f64, motion: BodyMotion| BodySpec {
            name: name.into(),
            shape: BodyShape::Box { size },
            density: 1.0,
            position: DVec3::new(0.0, y, 0.0),
            orientation: DQuat::from_rotation_y(0.1 * y),
            velocity: DVec3::new(0.0, -50.0, 0.0),
            angular_velocity: DVec3::ZERO,
            motion,
            shell: ShellMaterial::default(),
        };
        let floor = DVec3::new(40.0, 2.0, 2.0);
        let mut bodies = vec![body("floor", floor, -1.0, BodyMotion::Fixed)];
        bodies.extend((0..4).map(|k| {
            let y = 1.0005 + 2.0005 * k as f64;
            body(
                &format!("cube{k}"),
                DVec3::splat(2.0),
                y,
                BodyMotion::Dynamic,
            )
        }));
        let mut scene = Scene {
            name: "column".into(),
            duration: 1.0,
            frame_interval: 1.0 / 30.0,
            gravity: DVec3::new(0.0, -981.0, 0.0),
            ..Scene::default()
        };
        scene.integrator.method = Method::Oba;
        scene.rigid = RigidScene {
            bodies,
            joints: Vec::new(),
            oba: ObaSettings {
                blasts: vec![Blast {
                    time: 6.5 / 30.0,
                    center: DVec3::new(-3.0, 2.0, 0.0),
                    radius: 10.0,
                    speed: 80.0,
                }],
                ..ObaSettings::default()
            },
        };
        scene
    }

    fn motion(sim: &ObaSimulation) -> Vec<(Pose, DVec3, DVec3)> {
        sim.bodies
            .iter()
            .map(|b| (b.pose, b.velocity, b.angular_velocity))
            .collect()
    }

    #[test]
    fn a_step_interrupted_in_its_position_update_leaves_the_bodies_as_they_were() {
        let scene = column();
        let mut interrupted = ObaSimulation::new(&scene).expect("valid");
        let mut whole = ObaSimulation::new(&scene).expect("valid");
        interrupted.stop_when(&STOP);
        let h = interrupted.step();
        for k in 0..8 {
            let (t, t_next) = (k as f64 * h, (k + 1) as f64 * h);
            let before = motion(&interrupted);
            let memory = interrupted.memory.clone();
            STOP.store(true, Ordering::Relaxed);
            let result = interrupted.take_step(t, t_next);
            STOP.store(false, Ordering::Relaxed);
            assert!(
                matches!(result, Err(RunError::Interrupted { .. })),
                "{result:?}"
            );
            assert!(interrupted.stats.run.interrupted);
            // The blast of step 7 was undone with the rest, and the planes remembered from
            // the last step were kept.
            assert_eq!(motion(&interrupted), before, "step {k}");
            assert!(interrupted.memory == memory, "step {k}");
            // Taken again, the step is the uninterrupted run's, bit for bit.
            interrupted.take_step(t, t_next).expect("runs");
            whole.take_step(t, t_next).expect("runs");
            assert_eq!(motion(&interrupted), motion(&whole), "step {k}");
        }
        assert!(whole.stats.totals.position_qps > 0);
        assert!(whole.memory != Memory::default(), "planes were remembered");
        assert!(whole.bodies[1].velocity.x.abs() > 1.0, "the blast pushed");
    }

    /// How far the free bodies of `end` are from where their velocities in `start` took them
    /// in a step `h` (the mass-weighted objective, each rotation as its reach's arc).
    fn distance_to_targets(start: &[Body], end: &[Body], h: f64) -> f64 {
        start
            .iter()
            .zip(end)
            .filter(|(b, _)| b.is_dynamic() && !b.frozen)
            .map(|(b, e)| {
                let target = b.pose.perturbed(b.velocity * h, b.angular_velocity * h);
                let arc =
                    rotation_between(e.pose.orientation, target.orientation).length() * b.reach;
                b.mass * (e.pose.position.distance_squared(target.position) + arc * arc)
            })
            .sum()
    }

    /// Runs profile `name` to `from` seconds, then takes each of the next `steps` steps twice
    /// from the same start, with the profile's settings and with them changed by `variant`,
    /// going on with the profile's: the position QPs and the distances to the targets of each.
    fn paired_steps(
        name: &str,
        from: f64,
        steps: u64,
        variant: impl Fn(&mut crate::scene::rigid::ObaSettings),
    ) -> ([u32; 2], [f64; 2]) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
        let scene = crate::scene::profile::load(&path, &[]).expect("the profile loads");
        let mut sim = ObaSimulation::new(&scene).expect("valid");
        let h = sim.step();
        let first = (from / h).round() as u64;
        for k in 0..first {
            sim.take_step(k as f64 * h, (k + 1) as f64 * h)
                .expect("runs");
        }
        let mut changed = sim.world.clone();
        variant(&mut changed.settings);
        let (mut qps, mut distance) = ([0u32; 2], [0.0; 2]);
        for k in first..first + steps {
            let (t, t_next) = (k as f64 * h, (k + 1) as f64 * h);
            for (v, world) in [&sim.world, &changed].into_iter().enumerate() {
                let mut bodies = sim.bodies.clone();
                let mut memory = sim.memory.clone();
                let (record, _) = step::take(
                    world,
                    &mut bodies,
                    &mut memory,
                    sim.gravity,
                    (t, t_next),
                    &|| false,
                )
                .expect("runs");
                qps[v] += record.position_qps;
                distance[v] += distance_to_targets(&sim.bodies, &bodies, h);
            }
            sim.take_step(t, t_next).expect("runs");
        }
        (qps, distance)
    }

    #[test]
    fn a_crawling_pile_ends_its_position_update_as_near_its_targets_with_fewer_qps() {
        // Between the two blasts (0.5 s and 1.5 s): the first blast's bricks fall and pile up.
        let (qps, distance) = paired_steps("profiles/oba_wall.toml", 0.6, 12, |s| {
            s.min_progress = 0.0;
        });
        // Measured: 349 position QPs against 564, and 1.055 times the distance to the
        // targets. Stopping the crawl saves QPs and leaves the piles about as near.
        assert!(
            f64::from(qps[0]) < 0.8 * f64::from(qps[1]),
            "{qps:?} position QPs"
        );
        assert!(distance[0] < 1.15 * distance[1], "{distance:?}");
    }

    #[test]
    fn an_accurate_step_ends_a_swinging_chains_position_update_as_near_its_targets() {
        // The pendulum swinging, its sticks held by their joints: each step's first QP restores
        // the joints, and a second one only confirms it.
        let (qps, distance) = paired_steps("profiles/oba_pendulum.toml", 10.0, 120, |s| {
            s.stop_on_accurate_step = false;
        });
        // Measured: 182 position QPs against 232, and the same distance to the targets
        // (0.99997 times).
        assert!(
            f64::from(qps[0]) < 0.9 * f64::from(qps[1]),
            "{qps:?} position QPs"
        );
        assert!(distance[0] < 1.01 * distance[1], "{distance:?}");
    }
}
