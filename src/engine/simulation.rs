//! ACM's driver ([`Simulation`]): its state (the model, the event table and queue, the contact
//! subsystem, the schedule), its public face, and its [`Stepper`] implementation. The loop
//! that advances it is in `event_loop.rs`.

use std::borrow::Cow;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use glam::DVec3;

use super::event_loop::EventLoop;
use super::speculative::Speculative;
use super::{build, Processed, Stats, WaitPolicy};
use crate::events::Scheduler;
use crate::model::Model;
use crate::scene::{Method, Scene, SceneError};
use crate::state::{beyond, VertexKind};
use crate::stepper::{FrameSink, FrameSource, PenaltyNow, Stepper};
use crate::team::Team;
use crate::{RunError, RunStats, SteerError};

/// ACM's driver: the model, advanced by a stream of events (see the module docs).
/// ACM's driver: the model, advanced by a stream of events, each pair's layers switched on by
/// its schedule (see the module docs).
#[derive(Debug)]
pub struct Simulation {
    /// The state the loop advances.
    pub(super) event_loop: EventLoop,
    /// How the loop learns when a pair needs a layer.
    pub(super) schedule: Schedule,
}

/// How ACM's loop learns when a pair of primitives needs a penalty layer: the two strategies
/// that plug into the one event loop (`EventLoop::dispatch`).
#[derive(Debug)]
pub(super) enum Schedule {
    /// Kinetic separation slabs certify each pair's distance ahead of time, and the broad
    /// phase's certificates its candidates: every kick re-times what it invalidates (thesis
    /// §5.3, the KDS).
    Certificates,
    /// Windows run with no certificate, are checked afterwards over the recorded paths, and are
    /// rolled back where a pair needed a layer (`contact.scheduler = "speculative"`).
    Windows(Box<Speculative>),
}

impl Simulation {
    /// Builds a simulation from a scene (validated first).
    pub fn new(scene: &Scene) -> Result<Self, SceneError> {
        build::simulation(Cow::Borrowed(scene))
    }

    /// [`Simulation::new`] from a scene that is not needed afterwards: its meshes are freed
    /// during the build, once copied, so that they do not add to the build's peak memory.
    pub fn from_scene(scene: Scene) -> Result<Self, SceneError> {
        build::simulation(Cow::Owned(scene))
    }

    /// Statistics so far (complete after each [`Stepper::run_until`]).
    pub fn stats(&self) -> &Stats {
        &self.event_loop.stats
    }

    /// The fastest speed a vertex may reach now (cm/s): what contact can resolve
    /// ([`crate::scene::SpeedLimit`]), infinite without contact. A force tick that makes a free vertex faster
    /// stops the run with [`RunError::TooFast`]; [`Self::set_velocity`] refuses faster
    /// velocities.
    pub(crate) fn speed_limit(&self) -> f64 {
        self.event_loop.speed_limit.at(self.event_loop.time)
    }

    /// Whether [`Self::set_velocity`] would accept `velocity` for `vertex` now.
    ///
    /// # Errors
    /// [`SteerError`]: the vertex is missing, fixed, or scripted with a key still to come, or
    /// the velocity is not finite or faster than `Self::speed_limit`.
    pub fn check_velocity(&self, vertex: usize, velocity: DVec3) -> Result<(), SteerError> {
        let state = &self.event_loop.model.state;
        if vertex >= state.len() {
            let count = state.len();
            return Err(SteerError::NoSuchVertex { vertex, count });
        }
        if state.kind[vertex] == VertexKind::Fixed {
            return Err(SteerError::Fixed { vertex });
        }
        if let Some(key) = self.next_script_key(vertex) {
            return Err(SteerError::Scripted { vertex, key });
        }
        if !velocity.is_finite() {
            return Err(SteerError::NotFinite { vertex });
        }
        let limit = self.speed_limit();
        if beyond(velocity.length_squared(), limit) {
            let speed = crate::state::speed(velocity);
            return Err(SteerError::TooFast {
                vertex,
                speed,
                limit,
            });
        }
        Ok(())
    }

    /// Sets the velocity of vertex `vertex` from the current time on (for embedding: steer a
    /// scripted obstacle between calls to [`Self::run_until`], or set initial conditions).
    ///
    /// # Errors
    /// [`SteerError`], changing nothing, where [`Self::check_velocity`] refuses it.
    pub fn set_velocity(&mut self, vertex: usize, velocity: DVec3) -> Result<(), SteerError> {
        self.check_velocity(vertex, velocity)?;
        self.event_loop
            .model
            .state
            .rebase(vertex, self.event_loop.time);
        let before = std::mem::replace(&mut self.event_loop.model.state.v[vertex], velocity);
        if let Some(c) = &mut self.event_loop.contact {
            if self.event_loop.model.state.inv_mass[vertex] > 0.0 {
                let mass = self.event_loop.model.state.mass[vertex];
                c.energy_put_in(0.5 * mass * (velocity.length_squared() - before.length_squared()));
            }
            let t = self.event_loop.time;
            c.after_kick(
                &[vertex as u32],
                &self.event_loop.model.state,
                t,
                &mut Scheduler {
                    table: &mut self.event_loop.events,
                    queue: &mut self.event_loop.queue,
                },
            );
        }
        Ok(())
    }

    /// The time of the next key of the script that moves `vertex`, while one is still to
    /// come: a velocity set on the vertex before then ([`Self::set_velocity`]) is replaced at
    /// that key. `None` for a vertex no script moves, or once its script's last key has passed.
    pub(crate) fn next_script_key(&self, vertex: usize) -> Option<f64> {
        let vertex = u32::try_from(vertex).ok()?;
        self.event_loop
            .model
            .scripts
            .iter()
            .zip(&self.event_loop.next_key)
            .filter(|(script, _)| script.vertices.binary_search(&vertex).is_ok())
            .filter_map(|(script, &key)| script.keys.get(key).map(|&(t, _)| t))
            .reduce(f64::min)
    }

    /// Sets how the pool's idle workers wait between the event loop's parallel phases:
    /// [`WaitPolicy::Active`] (the default) keeps them polling while [`Self::run_until`] runs,
    /// so each fork costs only its work; [`WaitPolicy::Passive`] lets them sleep.
    pub fn set_wait_policy(&mut self, policy: WaitPolicy) {
        self.event_loop.wait = policy;
    }

    /// Turns the audit on or off: every live certificate holds and every close pair has its layers
    /// active after every event (checked as the engine's `Contact::audit` explains); the first
    /// breach stops the run.
    pub fn set_audit(&mut self, on: bool) {
        self.event_loop.audit = on;
        if let Some(c) = &mut self.event_loop.contact {
            c.set_auditing(on);
        }
    }

    /// The candidate pairs with a penalty layer active now, each as its global vertex indices
    /// (a vertex-triangle or edge-edge pair: four; a triangle pair: six) and its deepest active
    /// layer. Empty for a scene without contact. For tools that ask which vertices contact
    /// couples (`examples/rank_traffic.rs`: pairs whose sides lie on different ranks).
    pub fn penalty_pairs(&self) -> impl Iterator<Item = (&[u32], u32)> + '_ {
        self.event_loop.contact.iter().flat_map(|c| c.penalized())
    }

    /// Processes the next event, whatever its time, and says what it was; `None` when the queue
    /// is empty. For tools that watch the loop event by event (`examples/walkthrough.rs`); a
    /// run is the same sequence of steps as [`Self::run_until`] takes.
    pub fn step(&mut self, sink: &mut dyn FrameSink) -> Result<Option<Processed>, RunError> {
        let started = Instant::now();
        let result = match &mut self.schedule {
            Schedule::Windows(spec) => spec.step(&mut self.event_loop, sink),
            Schedule::Certificates => self.event_loop.process_next(f64::INFINITY, sink),
        };
        self.event_loop.stats.run.wall_seconds += started.elapsed().as_secs_f64();
        self.event_loop.refresh_stats();
        result
    }
}

impl Stepper for Simulation {
    fn method(&self) -> Method {
        Method::Acm
    }

    fn run_until(&mut self, until: f64, sink: &mut dyn FrameSink) -> Result<(), RunError> {
        let started = Instant::now();
        let team = Team::start(self.event_loop.wait);
        let result = match &mut self.schedule {
            Schedule::Certificates => self.event_loop.run_certified(until, sink),
            Schedule::Windows(spec) => spec.run_until(&mut self.event_loop, until, sink),
        };
        drop(team);
        self.event_loop.stats.run.wall_seconds += started.elapsed().as_secs_f64();
        crate::profiling::flush_workers();
        self.event_loop.refresh_stats();
        result
    }

    fn stop_when(&mut self, flag: &'static AtomicBool) {
        self.event_loop.stop = Some(flag);
    }

    fn stats_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.event_loop.stats).expect("the statistics are plain data")
    }

    fn summary(&self) -> String {
        let s = &self.event_loop.stats;
        let mut line = format!(
            "{} events, {:.2} s wall, {:.0} events/s",
            s.events_total, s.run.wall_seconds, s.events_per_second
        );
        if let Some(c) = s.contact.as_ref().filter(|c| c.windows > 0) {
            line += &format!(
                "; speculative: {} windows committed after {} rollbacks, which ran {} events \
                 again ({:.1}% on top of the {} committed)",
                c.windows,
                c.rollbacks,
                c.rolled_back_events,
                100.0 * c.rolled_back_events as f64 / s.events_total.max(1) as f64,
                s.events_total
            );
        }
        line
    }
}

impl FrameSource for Simulation {
    fn model(&self) -> &Model {
        self.event_loop.model()
    }

    fn time(&self) -> f64 {
        self.event_loop.time()
    }

    fn run_stats(&self) -> &RunStats {
        self.event_loop.run_stats()
    }

    /// Events processed so far, of every kind (live; [`Simulation::stats`] is complete after
    /// each [`Stepper::run_until`]).
    fn work_done(&self) -> u64 {
        self.event_loop.work_done()
    }

    fn vertex_steps(&self, out: &mut Vec<f64>) {
        self.event_loop.vertex_steps(out);
    }

    fn contact_energy(&self, positions: &[DVec3]) -> f64 {
        self.event_loop.contact_energy(positions)
    }

    fn penalty_now(&self) -> PenaltyNow {
        self.event_loop.penalty_now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{EventId, EventKind};
    use crate::scene::{Material, SceneObject};
    use crate::stepper::NoFrames;

    #[test]
    fn a_refused_velocity_says_why_and_changes_nothing() {
        let sheet = crate::mesh::sheet(3, 3, 10.0, 10.0).unwrap();
        let scene = Scene::builder("steer")
            .object(SceneObject::new("sheet", sheet.clone()))
            .object(
                SceneObject::new("floor", sheet.clone())
                    .translated(DVec3::new(0.0, -5.0, 0.0))
                    .fixed(),
            )
            .with(|s| {
                s.scripts.push(crate::scene::ScriptSpec {
                    set: crate::scene::VertexSet {
                        object: 0,
                        vertices: vec![1],
                    },
                    keys: vec![(0.0, DVec3::ZERO), (0.5, DVec3::X)],
                })
            })
            .build()
            .unwrap();
        let mut sim = Simulation::new(&scene).unwrap();
        let before = sim.model().state().v.clone();
        let x = DVec3::X;
        let refusals = [
            (
                18,
                x,
                SteerError::NoSuchVertex {
                    vertex: 18,
                    count: 18,
                },
            ),
            (9, x, SteerError::Fixed { vertex: 9 }),
            (
                1,
                x,
                SteerError::Scripted {
                    vertex: 1,
                    key: 0.0,
                },
            ),
            (
                2,
                DVec3::new(f64::NAN, 0.0, 0.0),
                SteerError::NotFinite { vertex: 2 },
            ),
        ];
        for (vertex, v, why) in refusals {
            assert_eq!(sim.set_velocity(vertex, v), Err(why));
        }
        let limit = sim.speed_limit();
        assert!(limit.is_finite(), "{limit}");
        let too_fast = sim.set_velocity(3, DVec3::new(2.0 * limit, 0.0, 0.0));
        assert!(matches!(
            too_fast,
            Err(SteerError::TooFast { vertex: 3, .. })
        ));
        assert_eq!(sim.model().state().v, before);
        sim.set_velocity(3, x).unwrap();
        assert_eq!(sim.model().state().v[3], x);
    }

    #[test]
    fn a_scene_given_away_builds_the_same_simulation() {
        let mut sheet = SceneObject {
            name: "sheet".into(),
            mesh: crate::mesh::sheet(4, 3, 10.0, 8.0).unwrap(),
            material: Material::default(),
            fixed: false,
            velocity: DVec3::new(0.0, -1.0, 0.0),
            particle_mass: None,
        };
        sheet.material.bend = 0.1;
        let scene = Scene {
            name: "sheet".into(),
            objects: vec![sheet],
            ..Scene::default()
        };
        let (mut kept, mut given) = (
            Simulation::new(&scene).unwrap(),
            Simulation::from_scene(scene.clone()).unwrap(),
        );
        for sim in [&mut kept, &mut given] {
            sim.run_until(0.01, &mut NoFrames).unwrap();
        }
        assert_eq!(kept.model().triangles(), given.model().triangles());
        assert_eq!(
            kept.model().triangles().len(),
            scene.objects[0].mesh.triangles.len()
        );
        assert_eq!(kept.model().state().x, given.model().state().x);
        assert_eq!(kept.model().state().v, given.model().state().v);
        assert_eq!(kept.stats().run.model, given.stats().run.model);
    }

    #[test]
    fn the_broad_phase_reads_the_simulations_triangle_list() {
        for kind in [
            crate::kds::BroadPhaseKind::Kdop18,
            crate::kds::BroadPhaseKind::SweptBoxes,
        ] {
            let sim = particle_over_floor_with(kind);
            let contact = sim
                .event_loop
                .contact
                .as_ref()
                .expect("the scene has contact");
            // One copy in memory (12 bytes a triangle), not an equal copy.
            assert!(std::ptr::eq(
                sim.event_loop.model().triangles(),
                contact.broad_phase().triangles()
            ));
        }
    }

    #[test]
    fn an_event_due_before_the_runs_time_stops_the_run() {
        let mut sim = particle_over_floor();
        let now = sim.event_loop.time();
        let (id, _) = sim.event_loop.queue.peek().expect("events are queued");
        sim.event_loop.queue.update(id, 0.5 * now);
        match sim.run_until(2.0 * now, &mut NoFrames) {
            Err(RunError::Internal {
                time,
                event,
                message,
            }) => {
                assert_eq!((time, event), (now, id.0));
                assert!(message.contains("before the run's time"), "{message}");
            }
            other => panic!("the run went on: {other:?}"),
        }
        assert_eq!(sim.event_loop.time(), now, "the clock went back");
    }

    #[test]
    fn an_instant_that_fires_too_many_events_stops_the_run_naming_the_pair() {
        // Near enough for the broad phase to pair it with the floor's two triangles.
        let mut sim = particle_over_floor_at(0.15, crate::kds::BroadPhaseKind::Kdop18);
        let now = sim.event_loop.time();
        let certificates: Vec<EventId> = (0..sim.event_loop.events.capacity_ids() as u32)
            .map(EventId)
            .filter(|&id| sim.event_loop.events.is_live_id(id))
            .filter(|&id| sim.event_loop.events.kind(id) == EventKind::Certificate)
            .collect();
        let [first, second, ..] = certificates[..] else {
            panic!("the particle has two slab certificates: {certificates:?}");
        };
        // Both certificates fail at the same instant, where this watchdog lets one event fire.
        sim.event_loop.watchdog = crate::engine::watchdog::Watchdog::with_limits(1, 0);
        sim.event_loop.queue.update(first, now);
        sim.event_loop.queue.update(second, now);
        match sim.run_until(2.0 * now, &mut NoFrames) {
            Err(e @ RunError::Stalled { time, events, .. }) => {
                assert_eq!((time, events), (now, 2));
                let message = e.to_string();
                assert!(
                    message.contains("separation slab of pair vertex 0 of \"p\""),
                    "{message}"
                );
            }
            other => panic!("the run went on: {other:?}"),
        }
    }

    /// A particle 0.5 cm above a fixed floor, no gravity, drifting sideways.
    fn particle_over_floor() -> Simulation {
        particle_over_floor_with(crate::kds::BroadPhaseKind::SweptBoxes)
    }

    /// The same with broad phase `kind`.
    fn particle_over_floor_with(kind: crate::kds::BroadPhaseKind) -> Simulation {
        particle_over_floor_at(0.5, kind)
    }

    /// The same `height` cm above the floor.
    fn particle_over_floor_at(height: f64, kind: crate::kds::BroadPhaseKind) -> Simulation {
        let floor = SceneObject {
            name: "floor".into(),
            mesh: crate::mesh::sheet(2, 2, 10.0, 10.0).unwrap(),
            material: Material::default(),
            fixed: true,
            velocity: DVec3::ZERO,
            particle_mass: None,
        };
        let mut particle = SceneObject::particle("p", DVec3::new(0.3, height, 0.2), 0.01);
        particle.velocity = DVec3::new(1.0, 0.0, 0.0);
        let mut scene = Scene {
            name: "audit".into(),
            objects: vec![floor, particle],
            gravity: DVec3::ZERO,
            ..Scene::default()
        };
        scene.contact.enabled = true;
        scene.contact.broad_phase = kind;
        let mut sim = Simulation::new(&scene).unwrap();
        sim.set_audit(true);
        sim.run_until(0.01, &mut NoFrames).unwrap();
        sim
    }

    /// Changes the particle's velocity behind the contact subsystem's back: a missed
    /// contingency, the bug the audit exists to catch.
    fn kick_silently(sim: &mut Simulation) {
        let p = sim.event_loop.model.state.len() - 1;
        sim.event_loop.model.state.rebase(p, sim.event_loop.time);
        sim.event_loop.model.state.v[p] = DVec3::new(0.0, -100.0, 0.0);
    }

    #[test]
    fn set_velocity_refuses_speeds_contact_cannot_resolve() {
        let mut sim = particle_over_floor();
        let p = sim.event_loop.model.state.len() - 1;
        let limit = sim.speed_limit();
        assert!(limit.is_finite() && limit > 0.0);
        let before = sim.event_loop.model.state.v[p];
        for speed in [1.001 * limit, f64::INFINITY, f64::NAN] {
            assert!(
                sim.set_velocity(p, DVec3::new(0.0, -speed, 0.0)).is_err(),
                "{speed}"
            );
            assert_eq!(
                sim.event_loop.model.state.v[p], before,
                "a refused velocity changes nothing"
            );
        }
        sim.set_velocity(p, DVec3::new(0.0, -0.999 * limit, 0.0))
            .unwrap();
    }

    #[test]
    fn the_audit_passes_a_correct_run() {
        let mut sim = particle_over_floor();
        let p = sim.event_loop.model.state.len() - 1;
        sim.set_velocity(p, DVec3::new(0.0, -100.0, 0.0)).unwrap();
        sim.run_until(0.02, &mut NoFrames).unwrap();
    }

    #[test]
    fn the_audit_catches_a_certificate_left_stale_by_a_missed_reschedule() {
        let mut sim = particle_over_floor();
        kick_silently(&mut sim);
        // 2 ms later the particle has fallen 0.2 cm: out of its broad-phase box, past where
        // its slab held. Either breach is the audit catching the missed reschedule.
        let err = sim.run_until(0.012, &mut NoFrames).unwrap_err();
        assert!(
            matches!(&err, RunError::Audit { message, .. }
                if message.contains("no longer holds") || message.contains("left its broad-phase box")),
            "{err}"
        );
    }

    #[test]
    fn the_audit_catches_a_missed_reschedule_with_the_kinetic_broad_phase() {
        let mut sim = particle_over_floor_with(crate::kds::BroadPhaseKind::Kdop18);
        kick_silently(&mut sim);
        // No slab exists yet (the particle is far from the floor) and the kinetic broad phase
        // has no event every window: the audit catches the vertex off its reference at the next
        // event, before the run ends.
        let err = sim.run_until(0.2, &mut NoFrames).unwrap_err();
        assert!(
            matches!(&err, RunError::Audit { message, .. }
                if message.contains("strayed from its broad-phase reference")),
            "{err}"
        );
    }
}
