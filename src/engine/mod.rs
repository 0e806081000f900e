//! The event loop (thesis Alg. 5 and 7): pop the earliest event, apply it, reschedule.
//!
//! Every force has a fixed clock and fires at `n * h` for `n = 0, 1, 2, ...` (computed from the
//! tick count, never accumulated, so clocks do not drift). Ties are broken by event id, so a run
//! is a pure function of its input. Snapshots read positions at their time without writing.

mod build;
mod contact;
mod contingency;
mod kicked;
mod layer_events;
mod speculative;
mod stats;
mod triangle_pairs;
mod warm_workers;
mod watchdog;

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use glam::DVec3;

use crate::events::{EventId, EventKind, EventQueue, EventTable, Scheduler};
use crate::model::{describe_vertices, ForceTarget, Model};
use crate::profiling::zone;
use crate::scene::{Method, Scene, SceneError, SpeedLimit};
use crate::state::{beyond, speed, VertexKind};
use crate::stepper::{Frame, FrameSink, NoFrames, PenaltyNow, Stepper};
use crate::{RunError, RunStats};

pub use contact::ContactStats;
pub use stats::{EventCounts, Stats};
pub use warm_workers::WaitPolicy;

/// One processed event, as [`Simulation::step`] reports it.
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

/// ACM's driver: the model, advanced by a stream of events (see the module docs).
#[derive(Debug)]
pub struct Simulation {
    /// What is simulated.
    model: Model,
    /// Ticks done of each of the model's forces: the next is at `ticks[f] * clock`.
    ticks: Vec<u64>,
    /// Per script: its next key.
    next_key: Vec<usize>,
    events: EventTable,
    queue: EventQueue,
    next_frame: u64,
    time: f64,
    scratch: Vec<DVec3>,
    contact: Option<contact::Contact>,
    /// The fastest a force tick may make a free vertex (none without contact): faster, the
    /// run stops ([`RunError::TooFast`]).
    speed_limit: SpeedLimit,
    /// The vertices the force ticks at `time` kicked, re-timed once after the last of them.
    kicked: kicked::Kicked,
    /// The speculative scheduler, when `contact.scheduler = "speculative"`.
    speculative: Option<Box<speculative::Speculative>>,
    audit: bool,
    /// Set from outside (a Ctrl-C handler) to stop the run between two events.
    stop: Option<&'static AtomicBool>,
    /// How the pool's idle workers wait between the loop's parallel phases.
    wait: WaitPolicy,
    /// Events popped so far (all kinds), for live progress reports.
    processed: u64,
    /// The event queue's size summed over the events processed (for [`Stats::queue_mean`]).
    queue_sizes: u64,
    /// Stops a run whose time stops moving.
    watchdog: watchdog::Watchdog,
    stats: Stats,
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
        &self.stats
    }

    /// The fastest speed a vertex may reach now (cm/s): what contact can resolve
    /// ([`SpeedLimit`]), infinite without contact. A force tick that makes a free vertex faster
    /// stops the run with [`RunError::TooFast`]; [`Self::set_velocity`] refuses faster
    /// velocities.
    pub fn speed_limit(&self) -> f64 {
        self.speed_limit.at(self.time)
    }

    /// Sets the velocity of vertex `vertex` from the current time on (for embedding: steer a
    /// scripted obstacle between calls to [`Self::run_until`], or set initial conditions).
    /// Returns false, changing nothing, if the vertex does not exist or is fixed, or if the
    /// speed is beyond [`Self::speed_limit`] (or not a number).
    pub fn set_velocity(&mut self, vertex: usize, velocity: DVec3) -> bool {
        if vertex >= self.model.state.len()
            || self.model.state.kind[vertex] == VertexKind::Fixed
            || beyond(velocity.length_squared(), self.speed_limit())
        {
            return false;
        }
        self.model.state.rebase(vertex, self.time);
        let before = std::mem::replace(&mut self.model.state.v[vertex], velocity);
        if let Some(c) = &mut self.contact {
            if self.model.state.inv_mass[vertex] > 0.0 {
                let mass = self.model.state.mass[vertex];
                c.energy_put_in(0.5 * mass * (velocity.length_squared() - before.length_squared()));
            }
            let t = self.time;
            c.after_kick(
                &[vertex as u32],
                &self.model.state,
                t,
                &mut Scheduler {
                    table: &mut self.events,
                    queue: &mut self.queue,
                },
            );
        }
        true
    }

    /// The time of the next key of the script that moves `vertex`, while one is still to
    /// come: a velocity set on the vertex before then ([`Self::set_velocity`]) is replaced at
    /// that key. `None` for a vertex no script moves, or once its script's last key has passed.
    pub fn next_script_key(&self, vertex: usize) -> Option<f64> {
        let vertex = u32::try_from(vertex).ok()?;
        self.model
            .scripts
            .iter()
            .zip(&self.next_key)
            .filter(|(script, _)| script.vertices.binary_search(&vertex).is_ok())
            .filter_map(|(script, &key)| script.keys.get(key).map(|&(t, _)| t))
            .reduce(f64::min)
    }

    /// Sets how the pool's idle workers wait between the event loop's parallel phases:
    /// [`WaitPolicy::Active`] (the default) keeps them polling while [`Self::run_until`] runs,
    /// so each fork costs only its work; [`WaitPolicy::Passive`] lets them sleep.
    pub fn set_wait_policy(&mut self, policy: WaitPolicy) {
        self.wait = policy;
    }

    /// Whether the flag of [`Self::stop_when`] is set.
    pub(crate) fn stop_requested(&self) -> bool {
        self.stop.is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Turns the audit on or off: every live certificate holds and every close pair has its layers
    /// active after every event (checked as the engine's `Contact::audit` explains); the first
    /// breach stops the run.
    pub fn set_audit(&mut self, on: bool) {
        self.audit = on;
        if let Some(c) = &mut self.contact {
            c.set_auditing(on);
        }
    }

    /// The candidate pairs with a penalty layer active now, each as its global vertex indices
    /// (a vertex-triangle or edge-edge pair: four; a triangle pair: six) and its deepest active
    /// layer. Empty for a scene without contact. For tools that ask which vertices contact
    /// couples (`examples/rank_traffic.rs`: pairs whose sides lie on different ranks).
    pub fn penalty_pairs(&self) -> impl Iterator<Item = (&[u32], u32)> + '_ {
        self.contact.iter().flat_map(|c| c.penalized())
    }

    /// Processes the next event, whatever its time, and says what it was; `None` when the queue
    /// is empty. For tools that watch the loop event by event (`examples/walkthrough.rs`); a
    /// run is the same sequence of steps as [`Self::run_until`] takes.
    pub fn step(&mut self, sink: &mut dyn FrameSink) -> Result<Option<Processed>, RunError> {
        let started = Instant::now();
        let result = if self.speculative.is_some() {
            speculative::step(self, sink)
        } else {
            self.process_next(f64::INFINITY, sink)
        };
        self.stats.run.wall_seconds += started.elapsed().as_secs_f64();
        self.refresh_stats();
        result
    }

    fn refresh_stats(&mut self) {
        if let Some(c) = &self.contact {
            let stats = c.stats();
            self.stats.events.contact = stats.slab_events
                + stats.broad_phase_events
                + stats.penalty_events_per_layer.iter().sum::<u64>();
            self.stats.contact = Some(stats);
        }
        self.stats.events_total = self.stats.events.total();
        self.stats.events_per_second = if self.stats.run.wall_seconds > 0.0 {
            self.stats.events_total as f64 / self.stats.run.wall_seconds
        } else {
            0.0
        };
        self.stats.run.threads = rayon::current_num_threads();
        self.stats.queue_mean = self.queue_sizes as f64 / self.processed.max(1) as f64;
    }

    fn event_loop(&mut self, until: f64, sink: &mut dyn FrameSink) -> Result<(), RunError> {
        if self.speculative.is_some() {
            return speculative::run_until(self, until, sink);
        }
        while self.process_next(until, sink)?.is_some() {
            if self.stop_requested() {
                self.stats.run.interrupted = true;
                return Err(RunError::Interrupted { time: self.time });
            }
        }
        self.flush_kicks();
        if self.audit {
            let _audit = zone!("audit");
            if let Some(c) = &mut self.contact {
                let breach = c
                    .take_breach()
                    .map_or_else(|| c.audit(&self.model.state, self.time, &self.queue), Err);
                breach.map_err(|message| RunError::Audit {
                    time: self.time,
                    at: "at the end of the run".into(),
                    message,
                })?;
            }
        }
        if until.is_finite() {
            self.time = self.time.max(until);
            self.stats.run.simulated_seconds = self.time;
        }
        Ok(())
    }

    /// Moves the run's clock (and the simulated time its stats report) to event `id`'s time
    /// `t`, counting it: an event due before the run's time is a bug (whatever it would do
    /// reads positions the state has left behind).
    fn advance_to(&mut self, id: EventId, t: f64) -> Result<(), RunError> {
        if t < self.time {
            return Err(RunError::Internal {
                time: self.time,
                event: id.0,
                message: format!(
                    "a {:?} event due at t = {t} s, before the run's time",
                    self.events.kind(id)
                ),
            });
        }
        if let Err(events) = self.watchdog.fire(t, self.events.len()) {
            return Err(RunError::Stalled {
                time: t,
                events,
                event: self.describe_event(id),
            });
        }
        self.processed += 1;
        self.time = t;
        self.stats.run.simulated_seconds = t;
        Ok(())
    }

    /// Event `id` in a user's terms: a contact certificate or layer tick by its pair, a force
    /// tick by its force.
    fn describe_event(&self, id: EventId) -> String {
        let payload = self.events.payload(id);
        match (self.events.kind(id), &self.contact) {
            (EventKind::Certificate, Some(c)) => {
                format!("the separation slab of pair {}", c.describe_pair(payload))
            }
            (EventKind::Penalty, _) => "a penalty layer's tick".into(),
            (EventKind::BroadPhase, _) => "the broad phase's".into(),
            (EventKind::Force, _) => {
                format!(
                    "a tick of {}",
                    self.model.forces[payload as usize].target.name()
                )
            }
            (EventKind::Script, _) => "a scripted motion's key".into(),
            (EventKind::Snapshot, _) => "a frame".into(),
            (EventKind::Certificate, None) => "a certificate".into(),
        }
    }

    /// Processes the next event if it is due by `until`.
    fn process_next(
        &mut self,
        until: f64,
        sink: &mut dyn FrameSink,
    ) -> Result<Option<Processed>, RunError> {
        while let Some((id, t)) = self.queue.peek() {
            if !self.kicked.is_empty()
                && (t > self.time || self.events.kind(id) != EventKind::Force)
            {
                self.flush_kicks();
                continue;
            }
            if t > until {
                return Ok(None);
            }
            let _event = zone!("event");
            {
                let _pop = zone!("pop");
                self.queue.pop();
            }
            self.advance_to(id, t)?;
            let kind = self.events.kind(id);
            let payload = self.events.payload(id);
            match kind {
                EventKind::Force => self.fire_force(id, t)?,
                EventKind::Script => self.fire_script(id),
                EventKind::Snapshot => self.fire_snapshot(id, t, sink)?,
                EventKind::Certificate | EventKind::Penalty | EventKind::BroadPhase => {
                    self.processed += self.fire_contact(id, kind, t)? as u64;
                }
            }
            self.note_queue_size();
            if self.audit {
                if let Some(message) = self.contact.as_mut().and_then(|c| c.take_breach()) {
                    return Err(RunError::Audit {
                        time: t,
                        at: format!("after event {} ({kind:?})", id.0),
                        message,
                    });
                }
            }
            return Ok(Some(Processed {
                time: t,
                kind,
                payload,
            }));
        }
        self.flush_kicks();
        Ok(None)
    }

    fn fire_force(&mut self, id: EventId, t: f64) -> Result<(), RunError> {
        let _force = zone!("force");
        let index = self.events.payload(id) as usize;
        let target = self.model.forces[index].target;
        if let Some(c) = &mut self.contact {
            c.before_force_tick(index, &self.model.state);
        }
        self.stats.events.count_tick(target);
        let fastest = self.model.tick_force(index, t);
        if beyond(fastest, self.speed_limit.at(t)) {
            return Err(self.too_fast(target, t));
        }
        if let Some(c) = &mut self.contact {
            c.after_force_tick(index, &self.model.state, t);
        }
        self.ticks[index] += 1;
        self.queue.push(id, self.next_tick(index));
        let mut kicked = std::mem::take(&mut self.kicked);
        match self.model.force_vertices(index) {
            None => kicked.add_everything(),
            Some(vertices) if self.contact.is_some() => kicked.add(vertices),
            Some(_) => {}
        }
        self.kicked = kicked;
        Ok(())
    }

    /// The time of force `f`'s next tick: `ticks * clock`, computed, never accumulated.
    fn next_tick(&self, f: usize) -> f64 {
        self.ticks[f] as f64 * self.model.forces[f].clock
    }

    /// The error for a tick of force `target` at `t` that sped a vertex past
    /// the speed limit: names the first such vertex.
    fn too_fast(&self, target: ForceTarget, t: f64) -> RunError {
        let limit = self.speed_limit.at(t);
        let vertex = (self.model.state)
            .first_beyond(0..self.model.state.len() as u32, limit)
            .unwrap_or_default() as usize;
        RunError::TooFast {
            time: t,
            force: target.name(),
            vertex: describe_vertices(&self.model.objects, &[vertex as u32]),
            speed: speed(self.model.state.v[vertex]),
            limit,
        }
    }

    /// Re-times the certificates of the vertices the force ticks at the current time kicked:
    /// every certificate if one of them was a whole-mesh tick.
    fn flush_kicks(&mut self) {
        if self.kicked.is_empty() {
            return;
        }
        let everything = self.kicked.everything();
        let vertices = self.kicked.take_vertices();
        if everything {
            self.retime_everything();
        } else if let Some(c) = &mut self.contact {
            let sched = &mut Scheduler {
                table: &mut self.events,
                queue: &mut self.queue,
            };
            c.after_kick(&vertices, &self.model.state, self.time, sched);
        }
        self.kicked.recycle(vertices);
    }

    /// Re-times every certificate after whole-mesh force ticks at the current time.
    fn retime_everything(&mut self) {
        let Some(c) = &self.contact else {
            return;
        };
        // Only parking and short-circuiting look ahead; the scan is skipped otherwise.
        let next = if c.schedules_against_all_vertex_events() {
            self.next_all_vertex_event()
        } else {
            f64::INFINITY
        };
        if let Some(c) = &mut self.contact {
            let t = self.time;
            let sched = &mut Scheduler {
                table: &mut self.events,
                queue: &mut self.queue,
            };
            c.after_global_kick(&self.model.state, t, next, sched);
        }
    }

    /// The time of the next all-vertex event: the earliest queued tick of a whole-mesh force
    /// (`Model::is_whole_mesh`), after which the loop re-times every certificate; `+inf`
    /// if there is none. Short-circuiting and parking (`speed.short_circuit`, `speed.parking`)
    /// certify only up to it, so it must be a time at which such a tick is queued now.
    fn next_all_vertex_event(&self) -> f64 {
        (0..self.model.forces.len())
            .filter(|&f| self.model.is_whole_mesh(self.model.forces[f].target))
            .map(|f| self.next_tick(f))
            .fold(f64::INFINITY, f64::min)
    }

    /// Records the event queue's size after an event, for [`Stats::queue_peak`] and
    /// [`Stats::queue_mean`].
    fn note_queue_size(&mut self) {
        let len = self.queue.len();
        self.stats.queue_peak = self.stats.queue_peak.max(len);
        self.queue_sizes += len as u64;
    }

    /// Fires contact event `id` (just popped) at `t`; returns how many more events than that
    /// one it processed (per-pair penalty events due together, see `layer_events.rs`).
    fn fire_contact(&mut self, id: EventId, kind: EventKind, t: f64) -> Result<usize, RunError> {
        let Some(contact) = &mut self.contact else {
            return Err(RunError::Internal {
                time: t,
                event: id.0,
                message: "a contact event without a contact subsystem".into(),
            });
        };
        let payload = self.events.payload(id);
        let sched = &mut Scheduler {
            table: &mut self.events,
            queue: &mut self.queue,
        };
        match kind {
            EventKind::Certificate => contact
                .fire_slab(payload, &self.model.state, t, sched)
                .map(|()| 0),
            EventKind::BroadPhase => {
                contact.fire_broad_phase(&self.model.state, t, sched);
                Ok(0)
            }
            _ => contact.fire_layer(payload, &mut self.model.state, t, sched),
        }
    }

    fn fire_script(&mut self, id: EventId) {
        let index = self.events.payload(id) as usize;
        let key = self.next_key[index];
        self.model.scripts[index].apply_key(&mut self.model.state, key);
        self.stats.events.script += 1;
        if let Some(c) = &mut self.contact {
            let t = self.model.scripts[index].keys[key].0;
            let vertices = &self.model.scripts[index].vertices;
            let sched = &mut Scheduler {
                table: &mut self.events,
                queue: &mut self.queue,
            };
            c.after_kick(vertices, &self.model.state, t, sched);
        }
        self.next_key[index] = key + 1;
        if let Some(&(t_next, _)) = self.model.scripts[index].keys.get(key + 1) {
            self.queue.push(id, t_next);
        }
    }

    fn fire_snapshot(
        &mut self,
        id: EventId,
        t: f64,
        sink: &mut dyn FrameSink,
    ) -> Result<(), RunError> {
        let _snapshot = zone!("snapshot");
        let mut positions = std::mem::take(&mut self.scratch);
        self.model.state.positions_at(t, &mut positions);
        if let Some(vertex) = positions.iter().position(|p| !p.is_finite()) {
            self.scratch = positions;
            return Err(RunError::Diverged { time: t, vertex });
        }
        let frame = Frame {
            index: self.next_frame,
            time: t,
            positions: &positions,
            stepper: self,
        };
        let result = sink.frame(&frame);
        self.scratch = positions;
        result?;
        self.stats.events.snapshot += 1;
        self.stats.run.frames += 1;
        self.next_frame += 1;
        self.queue
            .push(id, self.next_frame as f64 * self.model.frame_interval);
        Ok(())
    }
}

impl Stepper for Simulation {
    fn method(&self) -> Method {
        Method::Acm
    }

    fn model(&self) -> &Model {
        &self.model
    }

    fn time(&self) -> f64 {
        self.time
    }

    fn run_until(&mut self, until: f64, sink: &mut dyn FrameSink) -> Result<(), RunError> {
        let started = Instant::now();
        let warm = warm_workers::WarmWorkers::start(self.wait);
        let result = self.event_loop(until, sink);
        drop(warm);
        self.stats.run.wall_seconds += started.elapsed().as_secs_f64();
        crate::profiling::flush_workers();
        self.refresh_stats();
        result
    }

    fn stop_when(&mut self, flag: &'static AtomicBool) {
        self.stop = Some(flag);
    }

    fn run_stats(&self) -> &RunStats {
        &self.stats.run
    }

    fn stats_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.stats).expect("the statistics are plain data")
    }

    fn summary(&self) -> String {
        let s = &self.stats;
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

    /// Events processed so far, of every kind (live; [`Simulation::stats`] is complete after each
    /// [`Stepper::run_until`]).
    fn work_done(&self) -> u64 {
        self.processed
    }

    /// The smallest clock among the force events and active penalty layers that act on each
    /// vertex (thesis §5.2: each element at its own pace).
    fn vertex_steps(&self, out: &mut Vec<f64>) {
        out.clear();
        out.resize(self.model.state.len(), f64::INFINITY);
        fn lower(out: &mut [f64], vertices: &[u32], h: f64) {
            for &v in vertices {
                out[v as usize] = out[v as usize].min(h);
            }
        }
        let (springs, hinges) = (&self.model.springs.kernel, &self.model.hinges.kernel);
        for f in &self.model.forces {
            let h = f.clock;
            match f.target {
                ForceTarget::Springs(b) => {
                    lower(out, &self.model.springs.bins[b as usize].vertices, h)
                }
                ForceTarget::Spring(e) => lower(out, &springs.ends[e as usize], h),
                ForceTarget::Hinges(b) => {
                    lower(out, &self.model.hinges.bins[b as usize].vertices, h)
                }
                ForceTarget::Hinge(e) => lower(out, &hinges.verts[e as usize], h),
                ForceTarget::Gravity => out.iter_mut().for_each(|s| *s = s.min(h)),
                ForceTarget::VertexGravity(v) => lower(out, &[v], h),
                ForceTarget::Prescribed(p) => {
                    lower(out, &self.model.prescribed[p as usize].vertices, h)
                }
                ForceTarget::Drag => lower(out, &self.model.drag.vertices, h),
            }
        }
        if let Some(c) = &self.contact {
            for (vertices, layer) in c.penalized() {
                lower(out, vertices, c.active_clock(layer));
            }
        }
        for (s, &w) in out.iter_mut().zip(&self.model.state.inv_mass) {
            if w == 0.0 {
                *s = f64::INFINITY;
            }
        }
    }

    fn contact_energy(&self, positions: &[DVec3]) -> f64 {
        self.contact.as_ref().map_or(0.0, |c| c.energy(positions))
    }

    fn penalty_now(&self) -> PenaltyNow {
        let mut now = PenaltyNow::default();
        for (_, layer) in self.penalty_pairs() {
            now.active_pairs += 1;
            now.deepest_layer = now.deepest_layer.max(layer);
        }
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::{Material, SceneObject};

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
            let contact = sim.contact.as_ref().expect("the scene has contact");
            // One copy in memory (12 bytes a triangle), not an equal copy.
            assert!(std::ptr::eq(
                sim.model().triangles(),
                contact.broad_phase().triangles()
            ));
        }
    }

    #[test]
    fn an_event_due_before_the_runs_time_stops_the_run() {
        let mut sim = particle_over_floor();
        let now = sim.time();
        let (id, _) = sim.queue.peek().expect("events are queued");
        sim.queue.update(id, 0.5 * now);
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
        assert_eq!(sim.time(), now, "the clock went back");
    }

    #[test]
    fn an_instant_that_fires_too_many_events_stops_the_run_naming_the_pair() {
        // Near enough for the broad phase to pair it with the floor's two triangles.
        let mut sim = particle_over_floor_at(0.15, crate::kds::BroadPhaseKind::Kdop18);
        let now = sim.time();
        let certificates: Vec<EventId> = (0..sim.events.capacity_ids() as u32)
            .map(EventId)
            .filter(|&id| sim.events.is_live_id(id))
            .filter(|&id| sim.events.kind(id) == EventKind::Certificate)
            .collect();
        let [first, second, ..] = certificates[..] else {
            panic!("the particle has two slab certificates: {certificates:?}");
        };
        // Both certificates fail at the same instant, where this watchdog lets one event fire.
        sim.watchdog = watchdog::Watchdog::with_limits(1, 0);
        sim.queue.update(first, now);
        sim.queue.update(second, now);
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
        let p = sim.model.state.len() - 1;
        sim.model.state.rebase(p, sim.time);
        sim.model.state.v[p] = DVec3::new(0.0, -100.0, 0.0);
    }

    #[test]
    fn set_velocity_refuses_speeds_contact_cannot_resolve() {
        let mut sim = particle_over_floor();
        let p = sim.model.state.len() - 1;
        let limit = sim.speed_limit();
        assert!(limit.is_finite() && limit > 0.0);
        let before = sim.model.state.v[p];
        for speed in [1.001 * limit, f64::INFINITY, f64::NAN] {
            assert!(
                !sim.set_velocity(p, DVec3::new(0.0, -speed, 0.0)),
                "{speed}"
            );
            assert_eq!(
                sim.model.state.v[p], before,
                "a refused velocity changes nothing"
            );
        }
        assert!(sim.set_velocity(p, DVec3::new(0.0, -0.999 * limit, 0.0)));
    }

    #[test]
    fn the_audit_passes_a_correct_run() {
        let mut sim = particle_over_floor();
        assert!(sim.set_velocity(sim.model.state.len() - 1, DVec3::new(0.0, -100.0, 0.0)));
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
