//! Rigid bodies and optimization-based animation (OBA: Schmidl 2002, Milenkovic and Schmidl
//! 2001): convex rigid bodies take one step per frame, and every collision and resting contact
//! inside the step is resolved at its end by quadratic programs (`docs/rigid.md`).
//!
//! A step (thesis Table 6.2) from `t` to `t + h`:
//! 1. **Targets**: each free body's pose where its velocity would take it (`x + v h`, the
//!    rotation `w h`); scripted bodies at their scripted pose.
//! 2. **Position update** ([`position`]): iterated QPs with one separating plane per close
//!    pair move the bodies as close to their targets as they can go without overlap.
//! 3. **Contacts** ([`geometry::contact_points`]) of the pairs within `oba.contact_distance`.
//! 4. **Momentum update** ([`impulses`]): the first collisions one at a time (the office toy),
//!    then one QP per contact group with restitution.
//! 5. **Static contact**: gravity `g h` added, then the same QP with restitution 0.
//! 6. **Freezing** (§6.7.2) of bodies resting in a cold volume.
//!
//! Frames are each body's surface posed (spheres tessellated for output only) in a model
//! [`Simulation`] whose objects are the bodies, so the frame writers and `acm check` read them
//! as any other run's. Under ACM, the synchronous baseline and implicit contact a body runs as
//! its surface, a stiff closed shell ([`shells`]).

pub mod body;
pub mod broad;
pub mod geometry;
pub mod hull;
pub mod impulses;
pub mod position;
pub mod profile;
pub mod qp;
pub mod scene;
pub mod shape;
pub mod shells;
mod stats;

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use glam::DVec3;

use crate::check::Conservation;
use crate::engine::{FrameSink, RunError, Simulation, Stats};
use crate::output::EnergyCsv;
use crate::scene::{Scene, SceneError};
use crate::sync::steps::{self, FixedSteps, Progress, Stepper};
use body::{Body, Pose};
use geometry::{contact_points, separation, tangent_frame, WorldPart};
use impulses::Contact;
use scene::BodyMotion;
pub use scene::{ObaSettings, RigidScene};
pub use stats::{ObaStats, StepRecord};

/// A joint with its anchor in each body's frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Joint {
    /// The two bodies.
    pub bodies: [usize; 2],
    /// The joint point in each body's frame.
    pub anchors: [DVec3; 2],
}

/// What the stages of a step share: every part of every body, the joints, the parameters.
#[derive(Clone, Debug)]
pub struct World {
    /// `(body, part)` of each part, in body order.
    pub parts: Vec<(usize, usize)>,
    /// Joints.
    pub joints: Vec<Joint>,
    /// Parameters.
    pub settings: ObaSettings,
}

impl World {
    /// Every part posed at `poses`.
    pub fn pose_parts(&self, bodies: &[Body], poses: &[Pose]) -> Vec<WorldPart> {
        self.parts
            .iter()
            .map(|&(b, k)| bodies[b].world_part(k, &poses[b]))
            .collect()
    }

    /// Pairs of parts of different bodies, one of them movable, whose `boxes` overlap.
    pub fn candidates(&self, boxes: &[(DVec3, DVec3)], movable: &[bool]) -> Vec<(usize, usize)> {
        broad::overlapping_pairs(boxes, |p, q| {
            let (a, b) = (self.parts[p].0, self.parts[q].0);
            a == b || !movable[a] && !movable[b]
        })
    }
}

/// Why an OBA run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum ObaError {
    /// The failures every integrator shares (divergence, output, interruption).
    #[error(transparent)]
    Run(#[from] RunError),
    /// No overlap-free poses exist for a step (prescribed motion pushes bodies together).
    #[error("OBA stopped at t = {time} s: {stuck}. No frame was written with the overlap")]
    Stuck {
        /// Start of the step.
        time: f64,
        /// Which bodies.
        stuck: position::Stuck,
    },
}

/// A scene of rigid bodies run by optimization-based animation.
#[derive(Debug)]
pub struct ObaSimulation {
    /// The bodies' surfaces as a model (all fixed; its vertices are posed after every step),
    /// what frame sinks read.
    model: Simulation,
    bodies: Vec<Body>,
    world: World,
    gravity: DVec3,
    /// Per body, its first vertex in the model.
    first_vertex: Vec<usize>,
    progress: Progress,
    clock: FixedSteps,
    steps_taken: u64,
    energies: Vec<Conservation>,
    energy_log: Option<std::io::BufWriter<std::fs::File>>,
    stats: ObaStats,
    /// The last position update's pairs and multipliers, the next one's warm start.
    memory: position::Memory,
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
        let model_scene = shells::output_scene(scene, &bodies);
        // The model's objects are the bodies, in order: its errors name bodies.
        let model = Simulation::new(&model_scene)
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
            model.stats().clone(),
        );
        let mut sim = Self {
            model,
            bodies,
            world,
            gravity: scene.gravity,
            first_vertex,
            progress: Progress::new(clock),
            clock,
            steps_taken: 0,
            energies: Vec::new(),
            energy_log: None,
            stats,
            memory: position::Memory::default(),
        };
        sim.pose_model();
        sim.energies.push(sim.conservation(0.0));
        Ok(sim)
    }

    /// The model (the bodies' surfaces), as frame sinks see it.
    pub fn simulation(&self) -> &Simulation {
        &self.model
    }

    /// The bodies.
    pub fn bodies(&self) -> &[Body] {
        &self.bodies
    }

    /// The current simulated time.
    pub fn time(&self) -> f64 {
        self.progress.time()
    }

    /// Statistics so far.
    pub fn stats(&self) -> &ObaStats {
        &self.stats
    }

    /// Energies and momenta at every frame so far (the rows of `energy.csv`).
    pub fn energies(&self) -> &[Conservation] {
        &self.energies
    }

    /// Writes `energy.csv` rows (the header of [`EnergyCsv`]; elastic and penalty energy are
    /// 0) to `path` for the frames so far and every frame from now on.
    pub fn log_energy(&mut self, path: &Path) -> std::io::Result<()> {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        writeln!(out, "{}", EnergyCsv::HEADER)?;
        for c in &self.energies {
            write_energy_row(&mut out, c)?;
        }
        out.flush()?;
        self.energy_log = Some(out);
        Ok(())
    }

    /// Stops [`Self::run_until`] between two steps once `flag` is set.
    pub fn stop_when(&mut self, flag: &'static AtomicBool) {
        self.model.stop_when(flag);
    }

    /// Takes steps while their end is at most `until`, handing frames (at step ends that are
    /// frame times, and at time 0) to `sink`.
    pub fn run_until(&mut self, until: f64, sink: &mut dyn FrameSink) -> Result<(), ObaError> {
        steps::run_until(self, until, sink)
    }

    /// Energies and momenta of the dynamic bodies now, at time `time`.
    pub fn conservation(&self, time: f64) -> Conservation {
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
        let state = self.model.model_mut().state;
        for (b, &first) in self.bodies.iter().zip(&self.first_vertex) {
            for (k, &p) in b.surface.0.iter().enumerate() {
                let x = b.pose.apply(p);
                state.x[first + k] = x;
                state.v[first + k] = b.point_velocity(x);
            }
        }
    }

    /// One step of OBA from `t` to `t_next`.
    fn step(&mut self, t: f64, t_next: f64) -> Result<(), ObaError> {
        let started = Instant::now();
        let h = t_next - t;
        let s = self.world.settings.clone();
        let mut record = StepRecord {
            time: t_next,
            ..StepRecord::default()
        };
        for blast in s.blasts.iter().filter(|b| (t..t_next).contains(&b.time)) {
            for b in self.bodies.iter_mut().filter(|b| b.is_dynamic()) {
                let d = b.pose.position - blast.center;
                if d.length() < blast.radius && d.length() > 0.0 {
                    b.velocity += blast.speed * (1.0 - d.length() / blast.radius) * d.normalize();
                    b.frozen = false;
                    b.rest_steps = 0;
                }
            }
        }
        let movable: Vec<bool> = self
            .bodies
            .iter()
            .map(|b| b.is_dynamic() && !b.frozen)
            .collect();
        let targets: Vec<Pose> = self
            .bodies
            .iter_mut()
            .zip(&movable)
            .map(|(b, &free)| {
                if free {
                    b.pose.perturbed(b.velocity * h, b.angular_velocity * h)
                } else if matches!(b.motion, BodyMotion::Scripted(_)) {
                    (b.velocity, b.angular_velocity) = b.scripted_velocity(t);
                    b.scripted_pose(t_next)
                } else {
                    b.pose
                }
            })
            .collect();
        let outcome = position::update(
            &self.world,
            &mut self.bodies,
            &targets,
            &movable,
            &mut self.memory,
        )
        .map_err(|stuck| ObaError::Stuck { time: t, stuck })?;
        let position_done = Instant::now();
        record.close_pairs = outcome.close_pairs;
        record.qps = outcome.qps;
        record.position_qps = outcome.qps;
        record.rollbacks = outcome.rollbacks;
        record.iterations = outcome.iterations;
        record.fallback = outcome.fallback;
        record.min_separation = outcome.min_separation;
        // Contacts of the close pairs within the contact distance.
        let parts = self.world.pose_parts(
            &self.bodies,
            &self.bodies.iter().map(|b| b.pose).collect::<Vec<_>>(),
        );
        let mut contacts = Vec::new();
        for pair in &outcome.pairs {
            if pair.separation.distance >= s.contact_distance {
                continue;
            }
            let (p, q) = pair.parts;
            let (a, b) = (self.world.parts[p].0, self.world.parts[q].0);
            let sep = separation(&parts[p], &parts[q]);
            for point in contact_points(&parts[p], &parts[q], sep.normal, s.contact_distance) {
                contacts.push(Contact {
                    bodies: (a, b),
                    point,
                    normal: sep.normal,
                    tangents: tangent_frame(sep.normal),
                });
            }
        }
        record.contacts = contacts.len() as u32;
        let tolerance = 1e-3 * s.contact_distance / h;
        record.collisions = contacts
            .iter()
            .filter(|c| c.normal_velocity(&self.bodies) < -tolerance)
            .count() as u32;
        // Momentum update: sequential collisions first (they may revive frozen bodies).
        let dynamic: Vec<bool> = self.bodies.iter().map(Body::is_dynamic).collect();
        let free_bodies = movable.iter().filter(|&&m| m).count();
        let limit = s.sequential_collisions.unwrap_or(if free_bodies <= 50 {
            free_bodies as u32
        } else {
            record.contacts / 10
        });
        record.sequential = impulses::sequential(
            &mut self.bodies,
            &contacts,
            &dynamic,
            s.restitution,
            s.friction,
            limit,
            tolerance,
        );
        let g = self.gravity.length() * h;
        for b in self.bodies.iter_mut().filter(|b| b.frozen) {
            if b.kinetic_energy() > 0.5 * b.mass * g * g {
                b.frozen = false;
                b.rest_steps = 0;
            } else {
                b.velocity = DVec3::ZERO;
                b.angular_velocity = DVec3::ZERO;
            }
        }
        let free: Vec<bool> = self
            .bodies
            .iter()
            .map(|b| b.is_dynamic() && !b.frozen)
            .collect();
        let momentum = impulses::solve(
            &self.world,
            &mut self.bodies,
            &contacts,
            &free,
            s.restitution,
            tolerance,
        );
        let momentum_done = Instant::now();
        for (b, _) in self.bodies.iter_mut().zip(&free).filter(|(_, &f)| f) {
            b.velocity += self.gravity * h;
        }
        let resting = impulses::solve(
            &self.world,
            &mut self.bodies,
            &contacts,
            &free,
            0.0,
            tolerance,
        );
        for o in [momentum, resting] {
            record.qps += o.qps;
            record.restitution_fallbacks += o.restitution_fallbacks;
            record.projections += o.projections;
            record.skipped_groups += o.skipped;
        }
        if let Some(after) = s.freeze_after {
            self.freeze(&contacts, &free, g, after);
        }
        record.frozen = self.bodies.iter().filter(|b| b.frozen).count() as u32;
        let done = Instant::now();
        record.seconds = done.duration_since(started).as_secs_f64();
        self.stats.record(
            &record,
            [
                position_done.duration_since(started).as_secs_f64(),
                momentum_done.duration_since(position_done).as_secs_f64(),
                done.duration_since(momentum_done).as_secs_f64(),
            ],
        );
        self.pose_model();
        Ok(())
    }

    /// Counts resting steps and freezes the bodies past `after` (§6.7.2): at most the kinetic
    /// energy gravity gives in a step, touching a fixed or frozen body, inside a cold volume.
    fn freeze(&mut self, contacts: &[Contact], free: &[bool], g: f64, after: u32) {
        let cold = &self.world.settings.cold;
        let mut supported = vec![false; self.bodies.len()];
        for c in contacts {
            let (a, b) = c.bodies;
            if !free[b] {
                supported[a] = true;
            }
            if !free[a] {
                supported[b] = true;
            }
        }
        for (i, b) in self.bodies.iter_mut().enumerate() {
            if !free[i] {
                continue;
            }
            let x = b.pose.position;
            let inside = cold.is_empty()
                || cold
                    .iter()
                    .any(|(lo, hi)| x.cmpge(*lo).all() && x.cmple(*hi).all());
            if inside && supported[i] && b.kinetic_energy() < 0.5 * b.mass * g * g {
                b.rest_steps += 1;
                if b.rest_steps > after {
                    b.frozen = true;
                    b.velocity = DVec3::ZERO;
                    b.angular_velocity = DVec3::ZERO;
                }
            } else {
                b.rest_steps = 0;
            }
        }
    }
}

impl Stepper for ObaSimulation {
    type Error = ObaError;

    fn simulation(&self) -> &Simulation {
        &self.model
    }

    fn run_stats(&mut self) -> &mut Stats {
        &mut self.stats.run
    }

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn record_steps(&mut self, steps: u64) {
        self.stats.steps = steps;
        self.stats.finish();
    }

    fn take_step(&mut self, t: f64, t_next: f64) -> Result<(), ObaError> {
        self.step(t, t_next)?;
        self.steps_taken += 1;
        if self.clock.frame_at(self.steps_taken).is_some() {
            let c = self.conservation(t_next);
            if let Some(out) = &mut self.energy_log {
                write_energy_row(out, &c)
                    .and_then(|()| out.flush())
                    .map_err(RunError::from)?;
            }
            self.energies.push(c);
        }
        Ok(())
    }
}

/// One `energy.csv` row.
fn write_energy_row(out: &mut impl std::io::Write, c: &Conservation) -> std::io::Result<()> {
    let (p, l) = (c.momentum, c.angular_momentum);
    writeln!(
        out,
        "{},{},{},{},{},{},{},{},{},{},{},{}",
        c.time, c.kinetic, c.elastic, c.gravity, c.penalty, c.total, p.x, p.y, p.z, l.x, l.y, l.z
    )
}

/// Refuses compound bodies whose parts overlap or touch: their mass would count the overlap
/// twice and their frames would intersect themselves.
fn compound_parts_apart(bodies: &[Body], specs: &[scene::BodySpec]) -> Result<(), SceneError> {
    for (i, (b, spec)) in bodies.iter().zip(specs).enumerate() {
        if !matches!(spec.shape, scene::BodyShape::Compound { .. }) {
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
