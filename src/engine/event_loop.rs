//! The one event loop (thesis Alg. 5 and 7): [`EventLoop::dispatch`] pops the earliest event
//! and applies it, under either schedule; [`EventLoop::run_certified`] is the loop of the KDS,
//! which re-times the certificates the kicks of each instant invalidate before moving on. The
//! speculative windows (`speculative/`) drive the same dispatch.

use std::sync::atomic::{AtomicBool, Ordering};

use glam::DVec3;

use super::contact::Contact;
use super::kicked::Kicked;
use super::watchdog::Watchdog;
use super::{Processed, Stats, WaitPolicy};
use crate::events::{EventId, EventKind, EventQueue, EventTable, Scheduler};
use crate::model::{describe_vertices, ForceTarget, Model};
use crate::profiling::zone;
use crate::scene::SpeedLimit;
use crate::state::{beyond, speed};
use crate::stepper::{Frame, FrameSink, FrameSource, PenaltyNow};
use crate::{RunError, RunStats};

/// The state ACM's loop advances: the model, each force's tick count and each script's next key,
/// the event table and queue, the contact subsystem, and the loop's own bookkeeping (the time,
/// the next frame, the kicks of the current instant, the counters).
#[derive(Debug)]
pub(super) struct EventLoop {
    /// What is simulated.
    pub(super) model: Model,
    /// Ticks done of each of the model's forces: the next is at `ticks[f] * clock`.
    pub(super) ticks: Vec<u64>,
    /// Per script: its next key.
    pub(super) next_key: Vec<usize>,
    pub(super) events: EventTable,
    pub(super) queue: EventQueue,
    pub(super) next_frame: u64,
    pub(super) time: f64,
    pub(super) scratch: Vec<DVec3>,
    pub(super) contact: Option<Contact>,
    /// The fastest a force tick may make a free vertex (none without contact): faster, the
    /// run stops ([`RunError::TooFast`]).
    pub(super) speed_limit: SpeedLimit,
    /// The vertices the force ticks at `time` kicked, re-timed once after the last of them.
    pub(super) kicked: Kicked,
    /// Whether kicks re-time certificates (the KDS; speculative windows keep none).
    pub(super) certificates: bool,
    pub(super) audit: bool,
    /// Set from outside (a Ctrl-C handler) to stop the run between two events.
    pub(super) stop: Option<&'static AtomicBool>,
    /// How the pool's idle workers wait between the loop's parallel phases.
    pub(super) wait: WaitPolicy,
    /// Events popped so far (all kinds), for live progress reports.
    pub(super) processed: u64,
    /// The event queue's size summed over the events processed (for [`Stats::queue_mean`]).
    pub(super) queue_sizes: u64,
    /// Stops a run whose time stops moving.
    pub(super) watchdog: Watchdog,
    pub(super) stats: Stats,
}

impl EventLoop {
    /// Whether the flag of [`Stepper::stop_when`](crate::Stepper::stop_when) is set.
    pub(super) fn stop_requested(&self) -> bool {
        self.stop.is_some_and(|f| f.load(Ordering::Relaxed))
    }

    pub(super) fn refresh_stats(&mut self) {
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

    /// The KDS's loop: processes every event up to and including `until`, re-timing after each
    /// instant the certificates its kicks invalidated.
    pub(super) fn run_certified(
        &mut self,
        until: f64,
        sink: &mut dyn FrameSink,
    ) -> Result<(), RunError> {
        while self.process_next(until, sink)?.is_some() {}
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
    pub(super) fn advance_to(&mut self, id: EventId, t: f64) -> Result<(), RunError> {
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
    pub(super) fn describe_event(&self, id: EventId) -> String {
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

    /// The KDS's step: processes the next event if it is due by `until`, first re-timing the
    /// certificates of the kicks of the instant before it.
    pub(super) fn process_next(
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
            return self.dispatch(sink).map(Some);
        }
        self.flush_kicks();
        Ok(None)
    }

    /// Pops the earliest event and applies it, handing `sink` the frame if it is a snapshot:
    /// the one place an event is dispatched, under either schedule. Stops the run on an audit
    /// breach (with `--audit`) and when the stop flag is set.
    pub(super) fn dispatch(&mut self, sink: &mut dyn FrameSink) -> Result<Processed, RunError> {
        let _event = zone!("event");
        let (id, t) = {
            let _pop = zone!("pop");
            self.queue.pop().ok_or_else(|| RunError::Internal {
                time: self.time,
                event: 0,
                message: "dispatch with no event queued".into(),
            })?
        };
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
        if self.stop_requested() {
            self.stats.run.interrupted = true;
            return Err(RunError::Interrupted { time: t });
        }
        Ok(Processed {
            time: t,
            kind,
            payload,
        })
    }

    pub(super) fn fire_force(&mut self, id: EventId, t: f64) -> Result<(), RunError> {
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
        // Under the KDS the kicks of this instant re-time their certificates once the instant
        // is over; speculative windows keep no certificate.
        if self.contact.is_some() && self.certificates {
            let mut kicked = std::mem::take(&mut self.kicked);
            match self.model.force_vertices(index) {
                None => kicked.add_everything(),
                Some(vertices) => kicked.add(vertices),
            }
            self.kicked = kicked;
        }
        Ok(())
    }

    /// The time of force `f`'s next tick: `ticks * clock`, computed, never accumulated.
    pub(super) fn next_tick(&self, f: usize) -> f64 {
        self.ticks[f] as f64 * self.model.forces[f].clock
    }

    /// The error for a tick of force `target` at `t` that sped a vertex past
    /// the speed limit: names the first such vertex.
    pub(super) fn too_fast(&self, target: ForceTarget, t: f64) -> RunError {
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
    pub(super) fn flush_kicks(&mut self) {
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
    pub(super) fn retime_everything(&mut self) {
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
    pub(super) fn next_all_vertex_event(&self) -> f64 {
        (0..self.model.forces.len())
            .filter(|&f| self.model.is_whole_mesh(self.model.forces[f].target))
            .map(|f| self.next_tick(f))
            .fold(f64::INFINITY, f64::min)
    }

    /// Records the event queue's size after an event, for [`Stats::queue_peak`] and
    /// [`Stats::queue_mean`].
    pub(super) fn note_queue_size(&mut self) {
        let len = self.queue.len();
        self.stats.queue_peak = self.stats.queue_peak.max(len);
        self.queue_sizes += len as u64;
    }

    /// Fires contact event `id` (just popped) at `t`; returns how many more events than that
    /// one it processed (per-pair penalty events due together, see `layer_events.rs`).
    pub(super) fn fire_contact(
        &mut self,
        id: EventId,
        kind: EventKind,
        t: f64,
    ) -> Result<usize, RunError> {
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

    pub(super) fn fire_script(&mut self, id: EventId) {
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

    pub(super) fn fire_snapshot(
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
            source: self,
        };
        let result = sink.frame(&frame);
        self.scratch = positions;
        // The next frame is due whether or not this one's sink failed: a run resumed after the
        // error hands out frames again.
        self.stats.events.snapshot += 1;
        self.next_frame += 1;
        self.queue
            .push(id, self.next_frame as f64 * self.model.frame_interval);
        result?;
        self.stats.run.frames += 1;
        Ok(())
    }
}

impl FrameSource for EventLoop {
    fn model(&self) -> &Model {
        &self.model
    }

    fn time(&self) -> f64 {
        self.time
    }

    fn run_stats(&self) -> &RunStats {
        &self.stats.run
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
        for (_, layer) in self.contact.iter().flat_map(|c| c.penalized()) {
            now.active_pairs += 1;
            now.deepest_layer = now.deepest_layer.max(layer);
        }
        now
    }
}
