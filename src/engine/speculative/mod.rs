//! Speculative contact scheduling (`contact.scheduler = "speculative"`; Ainsley, Vouga,
//! Grinspun and Tamstorf, *Speculative Parallel Asynchronous Contact Mechanics*, 2012, after
//! Time Warp): instead of certificates that say ahead of time when a pair must be looked at
//! again, every force and every active penalty layer runs through a time window with no
//! certificate at all, and the window is checked afterwards.
//!
//! One window, `[start, end)`:
//! 1. save the state at evenly spaced marks as the window runs ([`rewinds`]);
//! 2. process every event before `end` as the loop does, recording each vertex's
//!    piecewise-linear path ([`history`]), and switching on the layers found needed by earlier
//!    runs of this window, each at its switch-on time (its first tick is the first multiple of
//!    its clock after that: the KDS rule);
//! 3. look over the recorded paths for pairs that came within `ACTIVATION * eta(l)` of a layer
//!    `l` they did not have ([`retrospective`]);
//! 4. if there are any, go back to the last mark before the earliest of them and run on from
//!    there with all of them switched on as well (and one layer more for a pair found again
//!    deeper than the layers switched on for it: it is sinking under a load). Up to the
//!    earliest the paths stay as recorded, so its layer is on time; the later ones may come
//!    too late once it acts, and a layer is never switched on inside itself: the next check
//!    finds such a pair again, earlier. Otherwise commit.
//!
//! A layer applies nothing to a pair beyond its thickness, so a find only spoils the run if
//! its pair also came within the thickness of the first layer it did not have (with a margin
//! of 1%, which leaves the audit room to prove it). A whole check whose finds all stayed
//! beyond that lets the run stand: their layers are switched on where it stopped, and the
//! ticks they missed would all have been idle. A glance's finds roll back either way: it
//! does not see every pair.
//!
//! Finds cluster near the start of a run: pairs in lasting contact that reach their next
//! layer as the window starts, contacts opening, pairs whose neighbours' layers just acted
//! after a rollback. So a run stops part of the way to be checked before it goes on:
//! - one mark after its start, for a glance: the narrow phase alone, over the candidate pairs
//!   of the last whole check (a fraction of a whole check's cost);
//! - two marks after its start, for a whole check (a probe), where the rest of the run is
//!   expected to cost far more than a check ([`PROBE_WORTH`]).
//!
//! A find that acts rolls back as at the window's end; a stop that stands seals nothing for
//! good, and the run goes on recording from there.
//!
//! A whole check reads the paths only from the latest mark up to which the window is known
//! clean: the window's start, a clean probe's mark, or the mark a whole check's find rolls
//! back to (it finds every pair needing a layer, so nothing came near before its earliest
//! find). No rollback goes back before that mark, so the paths before it stay as checked.
//!
//! Every run of a window costs as much as the first, so layers are switched on generously:
//! each at the time its pair first came within twice the activation distance on the recorded
//! path, a deeper one too where the recorded path reached it, and a layer is only left once
//! its pair separates beyond twice its thickness (not at its thickness, as under the KDS;
//! 1.25 times for a layer from the third down that the pair never acted in). A
//! layer applies nothing to a pair beyond its thickness, so none of this changes the motion:
//! the frames are the KDS's, bit for bit, and only the counts of active layers and the clocks
//! acting on vertices (`contact.csv`, `steps.csv`) are higher. The exception is the work
//! closure of elastic contact (`cor = 1`, `contact.closure_restitution`): it acts at the first
//! tick that finds a pair outside its layers, and idle layers tick there too, so elastic runs
//! agree with the KDS's closely, not bit for bit.
//!
//! The two schedulers share the pair table and the layer ticks and apply the same activation
//! rule, so they differ only in when a layer is found to be needed. Windows never straddle a
//! frame: a snapshot is only ever processed at the start of a window, from committed state,
//! and is handed to the sink once however often its window runs. The window grows while
//! windows commit at the first try and shrinks after a rollback; its sequence depends on the
//! trajectory only, never on the number of threads.

mod checkpoint;
mod frame_check;
mod history;
mod retrospective;
mod rewinds;

use frame_check::CheckedFrames;
use history::History;
use retrospective::{Retrospective, Timeline, Violation};
use rewinds::Rewinds;

use super::contact::{Contact, LayerChange, WindowCounts, ACTIVATION};
use super::event_loop::EventLoop;
use super::Processed;
use crate::events::{EventKind, Scheduler};
use crate::penalty::PairKey;
use crate::profiling::zone;
use crate::stepper::{FrameSink, NoFrames};
use crate::RunError;
use hashbrown::HashMap;

/// The first window, as a fraction of the frame interval.
const FIRST_WINDOW: f64 = 1.0 / 8.0;

/// A window whose whole checks found layers needed at most [`CALM_ROLLBACKS`] times, rolled
/// back or not, makes the next this much longer; one that found more makes the next half as
/// long (a glance's find replays at most a mark's run, so it does not count). A window costs a
/// check of every vertex however short it is, and a pair in lasting contact finds a layer to
/// switch on in most windows, so one find is no reason to shrink. Finds that let the run stand
/// count too: not counted, they grew the knot's windows until its idle layers ticked 50% more
/// often than the rollbacks they saved cost.
const GROWTH: f64 = 1.5;

/// A window run again more often than this stops the run (a bug: each run switches on a
/// layer the last one needed).
const MAX_ROLLBACKS: u64 = 10_000;

/// See [`GROWTH`].
const CALM_ROLLBACKS: u64 = 2;

/// Windows never get shorter than this fraction of the frame interval by rollbacks.
const SHORTEST_WINDOW: f64 = 1e-6;

/// Recorded paths stay within this fraction of the first layer's thickness of the paths taken
/// (see [`history`]): far below the gaps between layers, and enough to record a cloth vertex's
/// path with a row per many kicks.
const PATH_DEVIATION: f64 = 1e-3;

/// A run is checked whole on its way to the window's end ([`Stop::Probe`]) only when what is
/// left of it after the probe is expected to cost at least this many kicks of every vertex. A
/// check costs about as much as 50 to 250 such kicks (measured on the benchmark scenes), and a
/// probe finds a layer needed before it in about a third of the runs it stops.
const PROBE_WORTH: f64 = 400.0;

/// The broad phase's reach beyond the first layer's activation distance (a relative margin for
/// the rounding of the volumes).
const REACH_MARGIN: f64 = 1.01;

/// What a check found: the layers needed, and whether the run checked stands.
struct Detection {
    /// The layers needed, each at the first time found, in pair order.
    found: Vec<Violation>,
    /// Whether the run stands: nothing found, or a whole check's finds none of which would
    /// have applied an impulse (no pair came within the thickness of a layer it did not have,
    /// only within its activation distance). A glance does not see every pair, so its finds
    /// never let the run stand.
    stands: bool,
}

/// Where a run of a window stops to be checked.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stop {
    /// At a mark, for the narrow phase alone over the last check's candidate pairs: a pair
    /// near in the last check is the likeliest to need a layer early in this run, and that
    /// check costs a fraction of the broad phase's.
    Glance(f64),
    /// At a mark, for a whole check of the window so far.
    Probe(f64),
    /// At the window's end, for the whole check that commits it.
    End,
}

impl Stop {
    /// The stop's time, if it is part of the way.
    fn time(self) -> Option<f64> {
        match self {
            Stop::Glance(t) | Stop::Probe(t) => Some(t),
            Stop::End => None,
        }
    }
}

/// The speculative scheduler's state between windows (see the module docs).
#[derive(Debug)]
pub(super) struct Speculative {
    /// The next window's length.
    length: f64,
    /// The longest window (the frame interval).
    longest: f64,
    /// Time up to which everything is committed: the next window's start.
    committed: f64,
    /// Vertex kicks per simulated second in the last run of a window: what the rest of a run
    /// is expected to cost.
    kick_rate: f64,
    /// Frames handed to the sink so far (a window run again does not hand them out twice).
    frames_emitted: u64,
    history: History,
    detector: Retrospective,
    rewinds: Rewinds,
    /// Layers to switch on in the window being run, by switch-on time (then pair and layer).
    pending: Vec<Violation>,
    /// The last whole check's candidate pairs.
    candidates: Vec<PairKey>,
    /// Whether the last check was whole: a glance looks at its candidates once, not again
    /// after a glance of its own that found layers (its finds' neighbours may be missing from
    /// them, and the pair they leave to act can only be found by a whole check).
    fresh: bool,
    /// Scratch: their vertices.
    vertices: Vec<u32>,
    /// Scratch: the window's layer changes, by pair.
    changes: Vec<LayerChange>,
}

impl Speculative {
    /// The scheduler of a simulation with `vertices` vertices whose contact subsystem is
    /// `contact`, writing frames every `frame_interval`.
    pub(super) fn new(contact: &Contact, vertices: usize, frame_interval: f64) -> Self {
        let (edges, triangles) = contact.primitives();
        Self {
            length: FIRST_WINDOW * frame_interval,
            longest: frame_interval,
            committed: 0.0,
            kick_rate: 0.0,
            frames_emitted: 0,
            history: History::new(PATH_DEVIATION * contact.schedule().eta(1)),
            detector: Retrospective::new(edges.to_vec(), triangles.to_vec(), vertices),
            rewinds: Rewinds::default(),
            pending: Vec::new(),
            candidates: Vec::new(),
            fresh: false,
            vertices: Vec::new(),
            changes: Vec::new(),
        }
    }
}

impl Speculative {
    /// Runs `sim` speculatively through every event up to and including `until` (what
    /// [`Stepper::run_until`](crate::Stepper::run_until) does in this mode).
    pub(super) fn run_until(
        &mut self,
        sim: &mut EventLoop,
        until: f64,
        sink: &mut dyn FrameSink,
    ) -> Result<(), RunError> {
        let mut sink = CheckedFrames::new(sink);
        while sim.queue.peek().is_some_and(|(_, t)| t <= until) {
            self.window(sim, until, &mut sink)?;
        }
        if until.is_finite() {
            sim.time = sim.time.max(until);
            sim.stats.run.simulated_seconds = sim.time;
        }
        Ok(())
    }

    /// Runs `sim` speculatively through one committed window and reports its last event (what
    /// [`crate::Simulation::step`] does in this mode); `None` when the queue is empty.
    pub(super) fn step(
        &mut self,
        sim: &mut EventLoop,
        sink: &mut dyn FrameSink,
    ) -> Result<Option<Processed>, RunError> {
        let mut sink = CheckedFrames::new(sink);
        let mut last = None;
        while last.is_none() && sim.queue.peek().is_some() {
            last = self.window(sim, f64::INFINITY, &mut sink)?;
        }
        Ok(last)
    }
}

impl Speculative {
    /// Runs, checks and commits one window ending by `until` (see the module docs); returns
    /// its last event.
    fn window(
        &mut self,
        sim: &mut EventLoop,
        until: f64,
        sink: &mut dyn FrameSink,
    ) -> Result<Option<Processed>, RunError> {
        let _zone = zone!("window");
        let (start, end, last) = self.open_window(sim, until);
        let mut counts = WindowCounts {
            committed: 1,
            ..WindowCounts::default()
        };
        let (mut next, mut processed, mut whole_finds) = (0, None, 0);
        let vertices = sim.model.state.len();
        let mut stop = if last {
            Stop::End
        } else {
            self.first_stop(end, vertices)
        };
        let mut from = start;
        loop {
            let to = stop.time().map_or((end, last), |t| (t, false));
            processed = self.run(sim, to, stop != Stop::End, (&mut next, processed), sink)?;
            counts.probes += u64::from(stop != Stop::End);
            let kicks = self.history.take_kicks();
            if to.0 > from {
                self.kick_rate = kicks as f64 / (to.0 - from);
            }
            from = to.0;
            let whole = !matches!(stop, Stop::Glance(_));
            let Detection { found, stands } = self.detect(sim, whole)?;
            if stands {
                if !found.is_empty() {
                    // Their layers are switched on where the run stopped.
                    whole_finds += 1;
                    self.switch_on_at_stop(sim, found, (to.0, stop == Stop::End), &mut next)?;
                }
                if stop == Stop::End {
                    break;
                }
                self.history.unseal();
                if let Stop::Probe(t) = stop {
                    self.history.checked_to(t);
                }
                stop = self.stop_after(stop, end, vertices);
                continue;
            }
            counts.rollbacks += 1;
            whole_finds += u64::from(whole);
            if counts.rollbacks > MAX_ROLLBACKS {
                return Err(RunError::Internal {
                    time: start,
                    event: 0,
                    message: format!("the window [{start}, {end}] s did not come clean"),
                });
            }
            let events_run = sim.processed;
            let resume;
            (resume, processed) = self.roll_back(sim, found, whole, (start, end), &mut next)?;
            counts.rolled_back_events += events_run - sim.processed;
            stop = self.first_stop(end, vertices);
            from = resume;
        }
        self.commit_window(sim, (start, end), counts, whole_finds);
        Ok(processed)
    }

    /// Opens a window at the committed time: returns its start, its end (no later than
    /// `until`, the next frame and the window's length) and whether it is of no length (it then
    /// takes the events at `until` itself), with the history, the layer log, the saved states
    /// and the pending layers begun afresh.
    fn open_window(&mut self, sim: &mut EventLoop, until: f64) -> (f64, f64, bool) {
        let start = self.committed.max(sim.time);
        // The first frame after the start (the one at the start, if due, is taken first): a
        // frame inside the window would be written from a run that may yet be rolled back.
        let mut next_frame = sim.next_frame;
        while next_frame as f64 * sim.model.frame_interval <= start {
            next_frame += 1;
        }
        let mut end = (start + self.length).min(until);
        end = end.min(next_frame as f64 * sim.model.frame_interval);
        self.history.begin(&sim.model.state, start);
        if let Some(log) = sim.contact.as_mut().and_then(Contact::speculative_log) {
            log.layers.clear();
        }
        self.rewinds.begin(start, end);
        self.pending.clear();
        (start, end, end <= start)
    }

    /// After a check that did not let the run stand: restores the last saved state before the
    /// earliest of `found` and queues every find's layer (and those sinking with them) to be
    /// switched on from there, no earlier than the resume point. Returns the resume time and
    /// the last event processed before it; an error when nothing new was found to switch on.
    fn roll_back(
        &mut self,
        sim: &mut EventLoop,
        found: Vec<Violation>,
        whole: bool,
        (start, end): (f64, f64),
        next: &mut usize,
    ) -> Result<(f64, Option<Processed>), RunError> {
        // Every find is switched on, not only the earliest. The paths after the earliest
        // change once its layer acts, so a later one may then come too late; but the next
        // check finds that pair again, earlier, and its earlier time is switched on too.
        // Up to the earliest the paths stay as recorded, so the run resumes from the last
        // mark before it.
        // A layer due before the resume point is switched on there: what it would have
        // ticked before the find applies nothing.
        let earliest = found.iter().map(|v| v.time).fold(f64::INFINITY, f64::min);
        let (resume, processed) = (self.rewinds).restore_before(earliest, sim, &mut self.history);
        debug_assert!(resume >= self.history.span().0);
        // A whole check finds every pair that needs a layer, so the window is clean up to
        // the earliest. With the audit on, only a clean check is audited, so the span
        // before the earliest is left to the next one.
        if whole && !sim.audit {
            self.history.checked_to(resume);
        }
        let (pending_before, first) = (self.pending.len(), found[0]);
        let sinking = sinking(&self.pending, &found);
        self.add_pending(found.into_iter().chain(sinking).map(|v| Violation {
            switch_on: v.switch_on.max(resume),
            ..v
        }));
        // Nothing new to switch on: the run from the same mark would be the same, forever.
        if self.pending.len() == pending_before {
            return Err(RunError::Internal {
                time: resume,
                event: 0,
                message: format!(
                    "the speculative window [{start}, {end}] s cannot come clean: its check \
                     finds only layers already switched on for this run (among them layer \
                     {} of pair {:?} from t = {} s), so running it again would find them \
                     again. Run this scene with contact.scheduler = \"kds\"",
                    first.layer, first.key, first.time
                ),
            });
        }
        *next = self.pending.partition_point(|p| p.switch_on < resume);
        Ok((resume, processed))
    }

    /// Commits the clean window `[start, end]`: drops the layers left inactive, counts the
    /// window, and sizes the next one (longer after a calm window, half this one's length
    /// after one with more whole-check finds than [`CALM_ROLLBACKS`]).
    fn commit_window(
        &mut self,
        sim: &mut EventLoop,
        (start, end): (f64, f64),
        counts: WindowCounts,
        whole_finds: u64,
    ) {
        let contact = sim.contact.as_mut().expect("contact is on");
        contact.drop_inactive(&mut Scheduler {
            table: &mut sim.events,
            queue: &mut sim.queue,
        });
        contact.count_window(counts);
        self.committed = end;
        self.length = if whole_finds <= CALM_ROLLBACKS {
            (GROWTH * self.length).min(self.longest)
        } else {
            (0.5 * (end - start)).max(SHORTEST_WINDOW * self.longest)
        };
    }

    /// Where the run about to start from the last mark saved stops first: one mark on for a
    /// glance if the last check was whole and had candidates; otherwise as after a glance.
    fn first_stop(&self, end: f64, vertices: usize) -> Stop {
        match self.rewinds.ahead(1) {
            Some(t) if self.fresh && !self.candidates.is_empty() => Stop::Glance(t),
            _ => self.probe_or_end(end, vertices),
        }
    }

    /// Where a run that came clean at `stop` stops next.
    fn stop_after(&self, stop: Stop, end: f64, vertices: usize) -> Stop {
        match stop {
            Stop::Glance(_) => self.probe_or_end(end, vertices),
            Stop::Probe(_) | Stop::End => Stop::End,
        }
    }

    /// A probe two marks on from the run's start if the rest of the run from there to `end` is
    /// expected to cost at least [`PROBE_WORTH`] kicks of each of the `vertices`; otherwise
    /// the window's end.
    fn probe_or_end(&self, end: f64, vertices: usize) -> Stop {
        let worth = |&t: &f64| self.kick_rate * (end - t) >= PROBE_WORTH * vertices as f64;
        (self.rewinds.ahead(2))
            .filter(worth)
            .map_or(Stop::End, Stop::Probe)
    }

    /// Processes the window's events (before `end`, or up to it if `last`) from where the last
    /// run or rollback left it, switching on the pending layers from `pending[next]` at their
    /// times (`next` is left at the first one it did not reach), saving the marks it passes,
    /// and records the paths. A `partway` run stops at `end` for a check of the window so far
    /// (a layer due at `end` is left to the run that goes on); otherwise `end` is the window's.
    /// Returns the window's last event (`processed` if it processes none).
    fn run(
        &mut self,
        sim: &mut EventLoop,
        (end, last): (f64, bool),
        partway: bool,
        (next, mut processed): (&mut usize, Option<Processed>),
        sink: &mut dyn FrameSink,
    ) -> Result<Option<Processed>, RunError> {
        loop {
            let due = sim
                .queue
                .peek()
                .filter(|&(_, t)| t < end || (last && t <= end));
            let horizon = due.map_or(if partway { end } else { f64::INFINITY }, |(_, t)| t);
            let switch_on = self
                .pending
                .get(*next)
                .map_or(f64::INFINITY, |p| p.switch_on);
            if self
                .rewinds
                .due()
                .is_some_and(|m| m <= horizon.min(switch_on))
            {
                self.rewinds.save(sim, &mut self.history, processed);
                continue;
            }
            if switch_on < horizon {
                // Its first tick may come before the event peeked: peek again.
                self.switch_on_next(sim, next)?;
                continue;
            }
            let Some((id, t)) = due else {
                break;
            };
            let kind = sim.events.kind(id);
            if matches!(kind, EventKind::Certificate | EventKind::BroadPhase) {
                return Err(RunError::Internal {
                    time: t,
                    event: id.0,
                    message: format!("a {kind:?} event in a speculative window"),
                });
            }
            // A frame is handed out once, however often its window runs.
            let emitted = kind == EventKind::Snapshot && sim.next_frame < self.frames_emitted;
            let frames: &mut dyn FrameSink = if emitted { &mut NoFrames } else { &mut *sink };
            let event = sim.dispatch(frames)?;
            match kind {
                EventKind::Force => self.record_force(sim, event.payload as usize),
                EventKind::Script => {
                    let script = &sim.model.scripts[event.payload as usize];
                    self.history.record(&sim.model.state, &script.vertices);
                }
                EventKind::Snapshot if !emitted => self.frames_emitted = sim.next_frame,
                EventKind::Penalty => {
                    if let Some(log) = sim.contact.as_mut().and_then(Contact::speculative_log) {
                        self.history.record(&sim.model.state, &log.kicked);
                    }
                }
                _ => {}
            }
            processed = Some(event);
        }
        if let Err(v) = self.history.seal(&sim.model.state, end) {
            return Err(RunError::Internal {
                time: end,
                event: 0,
                message: format!("vertex {v}'s velocity changed without being recorded"),
            });
        }
        Ok(processed)
    }

    /// Records the velocity changes of a tick of force `index`.
    fn record_force(&mut self, sim: &EventLoop, index: usize) {
        match sim.model.force_vertices(index) {
            Some(vertices) => self.history.record(&sim.model.state, vertices),
            None => self.history.record_all(&sim.model.state),
        }
    }

    /// Switches on the layers of `found` at `t`, where a run that stands stopped: at once if
    /// that is the window's `end`, otherwise as pending layers of the run that goes on from
    /// there (`next` is its first pending layer). Their pairs came no nearer than their
    /// thickness before, so the ticks the layers would have had applied nothing.
    fn switch_on_at_stop(
        &mut self,
        sim: &mut EventLoop,
        found: Vec<Violation>,
        (t, end): (f64, bool),
        next: &mut usize,
    ) -> Result<(), RunError> {
        let at_stop = found.into_iter().map(|v| Violation { switch_on: t, ..v });
        if !end {
            self.add_pending(at_stop);
            *next = self.pending.partition_point(|p| p.switch_on < t);
            return Ok(());
        }
        let contact = sim.contact.as_mut().expect("contact is on");
        let sched = &mut Scheduler {
            table: &mut sim.events,
            queue: &mut sim.queue,
        };
        for v in at_stop {
            contact.switch_on_speculatively(v.key, v.layer, &sim.model.state, t, sched)?;
        }
        Ok(())
    }

    /// Adds `layers` to the pending ones, kept in order (by switch-on time, then pair, layer
    /// and find) and each once.
    fn add_pending(&mut self, layers: impl Iterator<Item = Violation>) {
        self.pending.extend(layers);
        self.pending.sort_unstable_by(|a, b| {
            (a.switch_on.total_cmp(&b.switch_on))
                .then(a.key.cmp(&b.key))
                .then(a.layer.cmp(&b.layer))
                .then(a.time.total_cmp(&b.time))
        });
        self.pending.dedup();
    }

    /// Switches on the next pending layer (`pending[next]`), which must not be due before the
    /// run's time: its pair's positions then are gone.
    fn switch_on_next(&mut self, sim: &mut EventLoop, next: &mut usize) -> Result<(), RunError> {
        let contact = sim.contact.as_mut().expect("contact is on");
        let p = self.pending[*next];
        if p.switch_on < sim.time {
            return Err(RunError::Internal {
                time: sim.time,
                event: 0,
                message: format!(
                    "layer {} of pair {:?} was due at t = {} s, before the run's time",
                    p.layer, p.key, p.switch_on
                ),
            });
        }
        let sched = &mut Scheduler {
            table: &mut sim.events,
            queue: &mut sim.queue,
        };
        contact.switch_on_speculatively(p.key, p.layer, &sim.model.state, p.switch_on, sched)?;
        *next += 1;
        Ok(())
    }

    /// The retrospective check of the window run so far: the layers it found needed, each at
    /// the first time found, in pair order, and whether the run stands. A `whole` check finds
    /// the candidate pairs first, and with the audit on, a whole check whose run stands is
    /// audited; otherwise the last check's candidates are looked at again.
    fn detect(&mut self, sim: &mut EventLoop, whole: bool) -> Result<Detection, RunError> {
        let _zone = zone!("retrospective");
        let contact = sim.contact.as_mut().expect("contact is on");
        let schedule = *contact.schedule();
        let reach = REACH_MARGIN * ACTIVATION * schedule.eta(1);
        let mut candidates = std::mem::take(&mut self.candidates);
        self.fresh = whole;
        if whole {
            self.history.fit_volumes(&sim.model.state);
            self.detector
                .candidates(&self.history, reach, &mut candidates);
        }
        self.vertices.clear();
        (self.vertices).extend(
            candidates
                .iter()
                .flat_map(|&k| self.detector.key_vertices(k)),
        );
        self.vertices.sort_unstable();
        self.vertices.dedup();
        self.history.select(&self.vertices);
        self.changes.clear();
        if let Some(log) = contact.speculative_log() {
            self.changes.extend_from_slice(&log.layers);
        }
        // Stable: each pair's changes stay in time order.
        self.changes.sort_by_key(|c| c.key);
        let changes = &self.changes;
        // Each pair's active layers from the span's start: the changes before it are done.
        let from = self.history.span().0;
        let keys: Vec<(PairKey, Timeline<'_>)> = candidates
            .iter()
            .map(|&key| {
                let a = changes.partition_point(|c| c.key < key);
                let b = changes.partition_point(|c| c.key <= key);
                let (done, changes) =
                    changes[a..b].split_at(changes[a..b].partition_point(|c| c.time < from));
                let start = match (done.last(), changes.first()) {
                    (Some(c), _) => c.after,
                    (None, Some(c)) => c.before,
                    (None, None) => contact.active_layers(key),
                };
                (key, Timeline { start, changes })
            })
            .collect();
        let found =
            (self.detector).violations(&self.history, &schedule, &sim.model.state.inv_mass, &keys);
        // A whole check's finds spoil the run only if one of them would have acted in it.
        let stands = found.is_empty()
            || (whole && {
                let found_keys: Vec<(PairKey, Timeline<'_>)> = (keys.iter())
                    .filter(|(k, _)| found.binary_search_by(|v| v.key.cmp(k)).is_ok())
                    .copied()
                    .collect();
                !(self.detector).may_act(&self.history, &schedule, &found_keys)
            });
        if stands && whole && sim.audit {
            let (start, end) = self.history.span();
            self.detector
                .audit(&self.history, &schedule, &keys)
                .map_err(|message| RunError::Audit {
                    time: end,
                    at: format!("in the window [{start}, {end}] s"),
                    message,
                })?;
        }
        drop(keys);
        self.candidates = candidates;
        Ok(Detection { found, stands })
    }
}

/// One layer more for each find of a pair that needs a deeper layer than those already pending
/// for it in this window, with the find's times: a pair found again deeper is sinking as its
/// layers take up a load (the sheet pressing on the sphere), and most often needs the next one
/// too. Each such layer saves a run of the window if reached and only ticks idle if not.
fn sinking(pending: &[Violation], found: &[Violation]) -> Vec<Violation> {
    let mut deepest: HashMap<PairKey, u32> = HashMap::new();
    for p in pending {
        let layer = deepest.entry(p.key).or_insert(p.layer);
        *layer = (*layer).max(p.layer);
    }
    (found.iter())
        .filter(|v| deepest.get(&v.key).is_some_and(|&l| l < v.layer))
        .map(|v| Violation {
            layer: v.layer + 1,
            ..*v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(key: PairKey, layer: u32, time: f64) -> Violation {
        Violation {
            time,
            key,
            layer,
            switch_on: 0.5 * time,
        }
    }

    #[test]
    fn a_pair_found_again_deeper_gets_one_layer_more() {
        let (a, b, c) = (
            PairKey::VertexTriangle(0, 1),
            PairKey::EdgeEdge(2, 3),
            PairKey::VertexTriangle(4, 5),
        );
        let pending = [find(a, 1, 0.1), find(a, 2, 0.1), find(b, 3, 0.2)];
        let found = [
            find(a, 3, 0.3),
            find(a, 2, 0.25),
            find(b, 3, 0.15),
            find(c, 1, 0.4),
        ];
        // Only `a` needs more than it had (2): its next layer, at the find's times. `b` came
        // sooner to a layer it had, `c` is new.
        assert_eq!(sinking(&pending, &found), vec![find(a, 4, 0.3)]);
        assert!(sinking(&[], &found).is_empty());
    }
}
