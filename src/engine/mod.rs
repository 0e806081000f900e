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

use crate::events::EventId;
use crate::events::{EventKind, EventQueue, EventTable, Scheduler};
use crate::forces::external::{
    gravity_tick, vertex_gravity_tick, Drag, PrescribedForce, ScriptedMotion,
};
use crate::forces::{HingeFamily, SpringFamily};
use crate::mesh::TriangleList;
use crate::profiling::zone;
use crate::scene::{Scene, SceneError, SpeedLimit};
use crate::state::{beyond, speed, VertexKind, VertexState};

pub use contact::ContactStats;
pub use stats::{ClockRange, Clocks, EventCounts, ModelSize, Stats};
pub use warm_workers::WaitPolicy;

/// One object's slice of the global buffers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRange {
    /// Object name.
    pub name: String,
    /// First global vertex index.
    pub first_vertex: u32,
    /// Number of vertices.
    pub vertex_count: u32,
    /// First global triangle index.
    pub first_triangle: u32,
    /// Number of triangles.
    pub triangle_count: u32,
}

/// Names global vertices in a user's terms: `vertex 12 of "sheet"`, `edge (3, 4) of "sheet"`,
/// `triangle (0, 1, 2) of "floor"` (indices local to the object, as in its mesh).
pub(crate) fn describe_vertices(objects: &[ObjectRange], vertices: &[u32]) -> String {
    let owner = objects
        .partition_point(|o| o.first_vertex <= vertices[0])
        .max(1)
        - 1;
    let object = &objects[owner];
    let local: Vec<u32> = vertices.iter().map(|&v| v - object.first_vertex).collect();
    let what = match local.as_slice() {
        [v] => format!("vertex {v}"),
        [a, b] => format!("edge ({a}, {b})"),
        [a, b, c] => format!("triangle ({a}, {b}, {c})"),
        more => format!("vertices {more:?}"),
    };
    format!("{what} of {:?}", object.name)
}

/// What a force event updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ForceTarget {
    /// The springs of one clock bin (a super-element).
    Springs(u8),
    /// One spring.
    Spring(u32),
    /// The hinges of one clock bin (a super-element).
    Hinges(u8),
    /// One hinge.
    Hinge(u32),
    /// Gravity on every free vertex (a super-element).
    Gravity,
    /// Gravity on one free vertex.
    VertexGravity(u32),
    /// A prescribed force.
    Prescribed(u32),
    /// Air drag.
    Drag,
}

impl ForceTarget {
    /// The force in a user's terms: `stretching`, `bending`, `gravity`, `a prescribed force` or
    /// `drag`.
    fn name(self) -> &'static str {
        match self {
            Self::Springs(_) | Self::Spring(_) => "stretching",
            Self::Hinges(_) | Self::Hinge(_) => "bending",
            Self::Gravity | Self::VertexGravity(_) => "gravity",
            Self::Prescribed(_) => "a prescribed force",
            Self::Drag => "drag",
        }
    }
}

/// A force event's target and clock; `tick` counts the ticks done, so the next is at
/// `tick * clock`.
#[derive(Clone, Copy, Debug)]
struct ForceEvent {
    target: ForceTarget,
    clock: f64,
    tick: u64,
}

impl ForceEvent {
    fn next_time(&self) -> f64 {
        self.tick as f64 * self.clock
    }
}

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

/// Penalty contact at one moment (see [`Simulation::penalty_now`]).
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
    /// The simulation, for reading anything else (velocities, stats, topology).
    pub simulation: &'a Simulation,
}

/// Receives frames as the simulation reaches them (file writers, progress, analysis).
pub trait FrameSink {
    /// Handles one frame; an error stops the run.
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

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The state is no longer finite: the run would write garbage, so it stops first.
    #[error(
        "the simulation diverged at t = {time} s: vertex {vertex} has a non-finite position or \
         velocity. A clock or step is too large for the material, or a force too strong: lower \
         integrator.safety, drop integrator.clock, lower sync.step or implicit.step, or weaken \
         the force"
    )]
    Diverged {
        /// Simulated time of the check.
        time: f64,
        /// First bad vertex (global index).
        vertex: usize,
    },
    /// A synchronous or implicit step left a vertex beyond [`crate::sync::steps::COORDINATE_LIMIT`]
    /// (its position, or its motion over a step, in some coordinate), where the cubics of
    /// continuous collision detection overflow: the next step could miss a collision.
    #[error(
        "the simulation left the range its collision detection can resolve at t = {time} s: \
         vertex {vertex} is at or moves by more than 1e100 cm in a step. Weaken the force"
    )]
    OutOfRange {
        /// Simulated time of the check.
        time: f64,
        /// First such vertex (global index).
        vertex: usize,
    },
    /// A penalty layer's clock is too small to advance the current time in f64: the run cannot
    /// make progress (thesis §6.1, App. A).
    #[error(
        "no progress at t = {time} s: layer {layer} of pair {pair} has clock {clock:e} s, too small \
         to advance time in double precision. The pair is being crushed harder than the layers \
         can resolve: lower the impact speed or r1, or raise eta1"
    )]
    NoProgress {
        /// Simulated time.
        time: f64,
        /// The pair, described.
        pair: String,
        /// The layer.
        layer: u32,
        /// Its clock.
        clock: f64,
    },
    /// Simulated time stopped moving: one instant fired far more events than the event table
    /// holds (the watchdog of the guarantee's progress, `engine/watchdog.rs`). Certificates that
    /// keep failing without time moving would spin forever; the run stops instead.
    #[error(
        "time stopped advancing at t = {time} s: {events} events fired at this instant without \
         moving it (the last: {event}). A certificate keeps failing; please report this \
         with the profile"
    )]
    Stalled {
        /// Simulated time.
        time: f64,
        /// Events fired at that instant.
        events: u64,
        /// The last event, described (for a contact certificate, its pair).
        event: String,
    },
    /// A pair holds more energy in its penalty layers than the scene has had, with headroom
    /// for the method's error: energy has run away, and the run stops rather than take ever
    /// finer layer clocks until it stalls (see the `energy_limit` module of the contact
    /// subsystem).
    #[error(
        "energy ran away at t = {time} s: pair {pair} reached penalty layer {layer}, where its \
         layers hold {held:.3e} erg, more than {headroom} times the {available:.3e} erg the scene \
         has had (its energy at the start plus the work gravity has done since). Energy has \
         grown without bound: lower contact.safety (see README, known limitations)"
    )]
    EnergyRunaway {
        /// Simulated time.
        time: f64,
        /// The pair, described.
        pair: String,
        /// The layer it switched on.
        layer: u32,
        /// Energy its active layers hold (erg).
        held: f64,
        /// Energy the scene has had (erg).
        available: f64,
        /// The factor allowed for the method's error.
        headroom: f64,
    },
    /// A pair moves so fast that one rounding of the current time in double precision covers
    /// more than a layer's certified margin, so a layer could no longer be switched on in time:
    /// the run stops before it could be.
    #[error(
        "time resolution exhausted at t = {time} s: pair {pair} closes at up to {speed:e} cm/s, \
         which one rounding of t crosses faster than layer {layer} can be certified. Energy has \
         probably grown without bound (see README, known limitations: lower contact.safety) or \
         the scene's speeds are too high"
    )]
    TimeResolution {
        /// Simulated time.
        time: f64,
        /// The pair, described.
        pair: String,
        /// The layer whose margin was crossed.
        layer: u32,
        /// The pair's largest vertex speed (cm/s).
        speed: f64,
    },
    /// A penalty impulse sped a vertex past the fastest speed contact can resolve
    /// ([`Scene::resolvable_speed`]): energy has run away, and the run stops rather than stall.
    #[error(
        "speeds ran away at t = {time} s: a penalty layer sped {vertex} to {speed:.3e} cm/s, \
         beyond the {limit:.3e} cm/s contact can resolve in this scene. Energy has grown without \
         bound: lower contact.safety (see README, known limitations)"
    )]
    SpeedRunaway {
        /// Simulated time.
        time: f64,
        /// The vertex, described.
        vertex: String,
        /// Its speed (cm/s).
        speed: f64,
        /// The resolvable speed (cm/s).
        limit: f64,
    },
    /// A force tick sped a free vertex past the fastest speed contact can resolve
    /// ([`Scene::resolvable_speed`]): a pair could then cross a layer between two instants of
    /// the broad phase's time resolution unseen, so the run stops first.
    #[error(
        "too fast at t = {time} s: {force} sped {vertex} to {speed:.3e} cm/s, beyond the \
         {limit:.3e} cm/s contact can resolve in this scene (a vertex must take at least 10 of \
         the broad phase's instants of 1e-9 (1 + t) s to cross contact.eta1). Weaken the force, \
         or allow faster speeds with a larger contact.eta1 or a shorter scene"
    )]
    TooFast {
        /// Simulated time.
        time: f64,
        /// The force that ticked: `gravity`, `stretching`, `bending`, `a prescribed force` or
        /// `drag`.
        force: &'static str,
        /// The vertex, described.
        vertex: String,
        /// Its speed (cm/s; NaN if it is no number).
        speed: f64,
        /// The resolvable speed (cm/s).
        limit: f64,
    },
    /// Two fixed or scripted primitives reached a penalty layer (came within `contact.eta1` of
    /// each other): no force can stop prescribed motion, so the run stops before they
    /// intersect.
    #[error(
        "at t = {time} s two fixed or scripted primitives reached a penalty layer, closer than \
         contact.eta1 ({pair}, global vertices {vertices:?}); no contact force can change \
         prescribed motion, so they would intersect. Change the scripts (or make one object \
         free) so that they stay farther apart"
    )]
    KinematicContact {
        /// Simulated time.
        time: f64,
        /// The pair, described.
        pair: String,
        /// Its four vertices (global indices).
        vertices: [u32; 4],
    },
    /// The audit found a broken invariant (`--audit`).
    #[error("audit failed at t = {time} s, {at}: {message}")]
    Audit {
        /// Simulated time.
        time: f64,
        /// Where: after which event (id and kind), or at the end of the run.
        at: String,
        /// What broke.
        message: String,
    },
    /// The flag of [`Simulation::stop_when`] was set: the run stopped between two events.
    #[error("interrupted at t = {time} s")]
    Interrupted {
        /// Simulated time reached.
        time: f64,
    },
    /// A frame sink failed (for example a full disk).
    #[error("output failed: {0}")]
    Output(#[from] std::io::Error),
    /// An invariant of the engine broke: a bug, reported with the event.
    #[error("internal error at t = {time} s, event {event}: {message}")]
    Internal {
        /// Simulated time.
        time: f64,
        /// The event being processed.
        event: u32,
        /// What broke.
        message: String,
    },
}

/// The parts of a [`Simulation`] that the synchronous baseline ([`crate::sync`]) steps itself
/// with one fixed step, borrowed together.
#[derive(Debug)]
pub(crate) struct Model<'a> {
    /// Vertex buffers.
    pub(crate) state: &'a mut VertexState,
    /// Stretching family.
    pub(crate) springs: &'a mut SpringFamily,
    /// Bending family.
    pub(crate) hinges: &'a mut HingeFamily,
    /// Air drag.
    pub(crate) drag: &'a mut Drag,
    /// Prescribed forces.
    pub(crate) prescribed: &'a [PrescribedForce],
    /// Scripted motion.
    pub(crate) scripts: &'a [ScriptedMotion],
}

/// A running simulation: the state, the force families, the event queue.
#[derive(Debug)]
pub struct Simulation {
    name: String,
    objects: Vec<ObjectRange>,
    triangles: TriangleList,
    state: VertexState,
    springs: SpringFamily,
    hinges: HingeFamily,
    gravity: DVec3,
    prescribed: Vec<PrescribedForce>,
    drag: Drag,
    scripts: Vec<ScriptedMotion>,
    next_key: Vec<usize>,
    forces: Vec<ForceEvent>,
    events: EventTable,
    queue: EventQueue,
    frame_interval: f64,
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

    /// Scene name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The current simulated time: every event before it has been processed.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// The vertex buffers (positions at each vertex's own clock; see [`VertexState`]).
    pub fn state(&self) -> &VertexState {
        &self.state
    }

    /// Objects and their slices of the global buffers.
    pub fn objects(&self) -> &[ObjectRange] {
        &self.objects
    }

    /// All triangles, in global vertex indices.
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// The stretching family.
    pub fn springs(&self) -> &SpringFamily {
        &self.springs
    }

    /// The bending family.
    pub fn hinges(&self) -> &HingeFamily {
        &self.hinges
    }

    /// Gravitational acceleration.
    pub fn gravity(&self) -> DVec3 {
        self.gravity
    }

    /// Time between frames.
    pub fn frame_interval(&self) -> f64 {
        self.frame_interval
    }

    /// Events processed so far, of every kind (live; `stats()` is complete after each
    /// `run_until`).
    pub fn events_processed(&self) -> u64 {
        self.processed
    }

    /// Statistics so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Writes every vertex's position at time `s` into `out`.
    pub fn positions_at(&self, s: f64, out: &mut Vec<DVec3>) {
        self.state.positions_at(s, out);
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
        if vertex >= self.state.len()
            || self.state.kind[vertex] == VertexKind::Fixed
            || beyond(velocity.length_squared(), self.speed_limit())
        {
            return false;
        }
        self.state.rebase(vertex, self.time);
        let before = std::mem::replace(&mut self.state.v[vertex], velocity);
        if let Some(c) = &mut self.contact {
            if self.state.inv_mass[vertex] > 0.0 {
                let mass = self.state.mass[vertex];
                c.energy_put_in(0.5 * mass * (velocity.length_squared() - before.length_squared()));
            }
            let t = self.time;
            c.after_kick(
                &[vertex as u32],
                &self.state,
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
        self.scripts
            .iter()
            .zip(&self.next_key)
            .filter(|(script, _)| script.vertices.binary_search(&vertex).is_ok())
            .filter_map(|(script, &key)| script.keys.get(key).map(|&(t, _)| t))
            .reduce(f64::min)
    }

    /// Stops [`Self::run_until`] between two events, with [`RunError::Interrupted`], once `flag`
    /// is set (for example by a Ctrl-C handler). The frames already handed out are whole, and
    /// [`Self::stats`] says how far the run got.
    pub fn stop_when(&mut self, flag: &'static AtomicBool) {
        self.stop = Some(flag);
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

    /// Penalty energy of the active layers at `positions`.
    pub fn penalty_energy(&self, positions: &[DVec3]) -> f64 {
        self.contact.as_ref().map_or(0.0, |c| c.energy(positions))
    }

    /// Penalty contact now: pairs with a layer active and the deepest active layer.
    pub fn penalty_now(&self) -> PenaltyNow {
        let mut now = PenaltyNow::default();
        for (_, layer) in self.penalty_pairs() {
            now.active_pairs += 1;
            now.deepest_layer = now.deepest_layer.max(layer);
        }
        now
    }

    /// The candidate pairs with a penalty layer active now, each as its global vertex indices
    /// (a vertex-triangle or edge-edge pair: four; a triangle pair: six) and its deepest active
    /// layer. Empty for a scene without contact. For tools that ask which vertices contact
    /// couples (`examples/rank_traffic.rs`: pairs whose sides lie on different ranks).
    pub fn penalty_pairs(&self) -> impl Iterator<Item = (&[u32], u32)> + '_ {
        self.contact.iter().flat_map(|c| c.penalized())
    }

    /// Writes each vertex's time step now into `out`: the smallest clock among the force events
    /// and active penalty layers that act on it (thesis §5.2: each element at its own pace), or
    /// infinity for a vertex that no force moves (fixed or scripted).
    pub fn vertex_steps(&self, out: &mut Vec<f64>) {
        out.clear();
        out.resize(self.state.len(), f64::INFINITY);
        fn lower(out: &mut [f64], vertices: &[u32], h: f64) {
            for &v in vertices {
                out[v as usize] = out[v as usize].min(h);
            }
        }
        let (springs, hinges) = (&self.springs.kernel, &self.hinges.kernel);
        for f in &self.forces {
            let h = f.clock;
            match f.target {
                ForceTarget::Springs(b) => lower(out, &self.springs.bins[b as usize].vertices, h),
                ForceTarget::Spring(e) => lower(out, &springs.ends[e as usize], h),
                ForceTarget::Hinges(b) => lower(out, &self.hinges.bins[b as usize].vertices, h),
                ForceTarget::Hinge(e) => lower(out, &hinges.verts[e as usize], h),
                ForceTarget::Gravity => out.iter_mut().for_each(|s| *s = s.min(h)),
                ForceTarget::VertexGravity(v) => lower(out, &[v], h),
                ForceTarget::Prescribed(p) => lower(out, &self.prescribed[p as usize].vertices, h),
                ForceTarget::Drag => lower(out, &self.drag.vertices, h),
            }
        }
        if let Some(c) = &self.contact {
            for (vertices, layer) in c.penalized() {
                lower(out, vertices, c.active_clock(layer));
            }
        }
        for (s, &w) in out.iter_mut().zip(&self.state.inv_mass) {
            if w == 0.0 {
                *s = f64::INFINITY;
            }
        }
    }

    /// Mutable access to the model for the synchronous baseline (its event queue is not used).
    pub(crate) fn model_mut(&mut self) -> Model<'_> {
        Model {
            state: &mut self.state,
            springs: &mut self.springs,
            hinges: &mut self.hinges,
            drag: &mut self.drag,
            prescribed: &self.prescribed,
            scripts: &self.scripts,
        }
    }

    /// Processes every event up to and including time `until`, handing frames to `sink`.
    pub fn run_until(&mut self, until: f64, sink: &mut dyn FrameSink) -> Result<(), RunError> {
        let started = Instant::now();
        let warm = warm_workers::WarmWorkers::start(self.wait);
        let result = self.event_loop(until, sink);
        drop(warm);
        self.stats.wall_seconds += started.elapsed().as_secs_f64();
        crate::profiling::flush_workers();
        self.refresh_stats();
        result
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
        self.stats.wall_seconds += started.elapsed().as_secs_f64();
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
        self.stats.events_per_second = if self.stats.wall_seconds > 0.0 {
            self.stats.events_total as f64 / self.stats.wall_seconds
        } else {
            0.0
        };
        self.stats.threads = rayon::current_num_threads();
        self.stats.queue_mean = self.queue_sizes as f64 / self.processed.max(1) as f64;
    }

    fn event_loop(&mut self, until: f64, sink: &mut dyn FrameSink) -> Result<(), RunError> {
        if self.speculative.is_some() {
            return speculative::run_until(self, until, sink);
        }
        while self.process_next(until, sink)?.is_some() {
            if self.stop_requested() {
                self.stats.interrupted = true;
                return Err(RunError::Interrupted { time: self.time });
            }
        }
        self.flush_kicks();
        if self.audit {
            let _audit = zone!("audit");
            if let Some(c) = &mut self.contact {
                let breach = c
                    .take_breach()
                    .map_or_else(|| c.audit(&self.state, self.time, &self.queue), Err);
                breach.map_err(|message| RunError::Audit {
                    time: self.time,
                    at: "at the end of the run".into(),
                    message,
                })?;
            }
        }
        if until.is_finite() {
            self.time = self.time.max(until);
            self.stats.simulated_seconds = self.time;
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
        self.stats.simulated_seconds = t;
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
                format!("a tick of {}", self.forces[payload as usize].target.name())
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
        let ForceEvent { target, clock, .. } = self.forces[index];
        if let Some(c) = &mut self.contact {
            c.before_force_tick(index, &self.state);
        }
        let counts = &mut self.stats.events;
        // The largest squared speed of the vertices kicked: from the parallel ticks as they
        // kick, afterwards for the others.
        let fastest = match target {
            ForceTarget::Springs(b) => {
                counts.stretching += 1;
                Some(self.springs.tick_bin(b as usize, t, clock, &mut self.state))
            }
            ForceTarget::Spring(e) => {
                counts.stretching += 1;
                self.springs.tick_one(e as usize, t, clock, &mut self.state);
                None
            }
            ForceTarget::Hinges(b) => {
                counts.bending += 1;
                Some(self.hinges.tick_bin(b as usize, t, clock, &mut self.state))
            }
            ForceTarget::Hinge(e) => {
                counts.bending += 1;
                self.hinges.tick_one(e as usize, t, clock, &mut self.state);
                None
            }
            ForceTarget::Gravity => {
                counts.gravity += 1;
                Some(gravity_tick(&mut self.state, self.gravity, t, clock))
            }
            ForceTarget::VertexGravity(v) => {
                counts.gravity += 1;
                vertex_gravity_tick(&mut self.state, v as usize, self.gravity, t, clock);
                None
            }
            ForceTarget::Prescribed(f) => {
                counts.prescribed += 1;
                self.prescribed[f as usize].tick(&mut self.state, t, clock);
                None
            }
            ForceTarget::Drag => {
                counts.drag += 1;
                self.drag.tick(&mut self.state, t);
                Some(self.state.fastest(self.drag.vertices.iter().copied()))
            }
        }
        .unwrap_or_else(|| {
            let kicked = self.local_vertices(index).unwrap_or_default();
            self.state.fastest(kicked.iter().copied())
        });
        if beyond(fastest, self.speed_limit.at(t)) {
            return Err(self.too_fast(target, t));
        }
        if let Some(c) = &mut self.contact {
            c.after_force_tick(index, &self.state, t);
        }
        let force = &mut self.forces[index];
        force.tick += 1;
        self.queue.push(id, force.next_time());
        let mut kicked = std::mem::take(&mut self.kicked);
        match self.local_vertices(index) {
            None => kicked.add_everything(),
            Some(vertices) if self.contact.is_some() => kicked.add(vertices),
            Some(_) => {}
        }
        self.kicked = kicked;
        Ok(())
    }

    /// The error for a tick of force `target` at `t` that sped a vertex past
    /// the speed limit: names the first such vertex.
    fn too_fast(&self, target: ForceTarget, t: f64) -> RunError {
        let limit = self.speed_limit.at(t);
        let vertex = (self.state)
            .first_beyond(0..self.state.len() as u32, limit)
            .unwrap_or_default() as usize;
        RunError::TooFast {
            time: t,
            force: target.name(),
            vertex: describe_vertices(&self.objects, &[vertex as u32]),
            speed: speed(self.state.v[vertex]),
            limit,
        }
    }

    /// The vertices a tick of force `index` kicks, or `None` for a whole-mesh tick
    /// ([`Self::is_whole_mesh`]), which may kick every vertex.
    fn local_vertices(&self, index: usize) -> Option<&[u32]> {
        let target = &self.forces[index].target;
        if self.is_whole_mesh(*target) {
            return None;
        }
        Some(match target {
            ForceTarget::Spring(e) => &self.springs.kernel.ends[*e as usize],
            ForceTarget::Hinge(e) => &self.hinges.kernel.verts[*e as usize],
            ForceTarget::Prescribed(f) => &self.prescribed[*f as usize].vertices,
            ForceTarget::VertexGravity(v) => std::slice::from_ref(v),
            ForceTarget::Springs(b) => &self.springs.bins[*b as usize].vertices,
            ForceTarget::Hinges(b) => &self.hinges.bins[*b as usize].vertices,
            ForceTarget::Gravity | ForceTarget::Drag => {
                unreachable!("whole-mesh ticks return above")
            }
        })
    }

    /// Whether a tick of `target` may change every vertex's velocity, so that the loop re-times
    /// every certificate after it (`Kicked::add_everything`): the *all-vertex events* of thesis
    /// §8.1, which short-circuiting and parking schedule against. Gravity, drag, and the clock
    /// bins that touch at least half of the vertices (re-timing everything once costs less
    /// than following so many vertices one by one).
    fn is_whole_mesh(&self, target: ForceTarget) -> bool {
        match target {
            ForceTarget::Springs(b) => self.springs.bins[b as usize].is_dense(),
            ForceTarget::Hinges(b) => self.hinges.bins[b as usize].is_dense(),
            ForceTarget::Gravity | ForceTarget::Drag => true,
            ForceTarget::Spring(_)
            | ForceTarget::Hinge(_)
            | ForceTarget::VertexGravity(_)
            | ForceTarget::Prescribed(_) => false,
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
            c.after_kick(&vertices, &self.state, self.time, sched);
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
            c.after_global_kick(&self.state, t, next, sched);
        }
    }

    /// The time of the next all-vertex event: the earliest queued tick of a whole-mesh force
    /// ([`Self::is_whole_mesh`]), after which the loop re-times every certificate; `+inf`
    /// if there is none. Short-circuiting and parking (`speed.short_circuit`, `speed.parking`)
    /// certify only up to it, so it must be a time at which such a tick is queued now.
    fn next_all_vertex_event(&self) -> f64 {
        self.forces
            .iter()
            .filter(|f| self.is_whole_mesh(f.target))
            .map(ForceEvent::next_time)
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
                .fire_slab(payload, &self.state, t, sched)
                .map(|()| 0),
            EventKind::BroadPhase => {
                contact.fire_broad_phase(&self.state, t, sched);
                Ok(0)
            }
            _ => contact.fire_layer(payload, &mut self.state, t, sched),
        }
    }

    fn fire_script(&mut self, id: EventId) {
        let index = self.events.payload(id) as usize;
        let key = self.next_key[index];
        self.scripts[index].apply_key(&mut self.state, key);
        self.stats.events.script += 1;
        if let Some(c) = &mut self.contact {
            let t = self.scripts[index].keys[key].0;
            let vertices = &self.scripts[index].vertices;
            let sched = &mut Scheduler {
                table: &mut self.events,
                queue: &mut self.queue,
            };
            c.after_kick(vertices, &self.state, t, sched);
        }
        self.next_key[index] = key + 1;
        if let Some(&(t_next, _)) = self.scripts[index].keys.get(key + 1) {
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
        self.state.positions_at(t, &mut positions);
        if let Some(vertex) = positions.iter().position(|p| !p.is_finite()) {
            self.scratch = positions;
            return Err(RunError::Diverged { time: t, vertex });
        }
        let frame = Frame {
            index: self.next_frame,
            time: t,
            positions: &positions,
            simulation: self,
        };
        let result = sink.frame(&frame);
        self.scratch = positions;
        result?;
        self.stats.events.snapshot += 1;
        self.stats.frames += 1;
        self.next_frame += 1;
        self.queue
            .push(id, self.next_frame as f64 * self.frame_interval);
        Ok(())
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
        assert_eq!(kept.triangles(), given.triangles());
        assert_eq!(
            kept.triangles().len(),
            scene.objects[0].mesh.triangles.len()
        );
        assert_eq!(kept.state().x, given.state().x);
        assert_eq!(kept.state().v, given.state().v);
        assert_eq!(kept.stats().model, given.stats().model);
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
                sim.triangles(),
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
        let p = sim.state.len() - 1;
        sim.state.rebase(p, sim.time);
        sim.state.v[p] = DVec3::new(0.0, -100.0, 0.0);
    }

    #[test]
    fn set_velocity_refuses_speeds_contact_cannot_resolve() {
        let mut sim = particle_over_floor();
        let p = sim.state.len() - 1;
        let limit = sim.speed_limit();
        assert!(limit.is_finite() && limit > 0.0);
        let before = sim.state.v[p];
        for speed in [1.001 * limit, f64::INFINITY, f64::NAN] {
            assert!(
                !sim.set_velocity(p, DVec3::new(0.0, -speed, 0.0)),
                "{speed}"
            );
            assert_eq!(sim.state.v[p], before, "a refused velocity changes nothing");
        }
        assert!(sim.set_velocity(p, DVec3::new(0.0, -0.999 * limit, 0.0)));
    }

    #[test]
    fn the_audit_passes_a_correct_run() {
        let mut sim = particle_over_floor();
        assert!(sim.set_velocity(sim.state.len() - 1, DVec3::new(0.0, -100.0, 0.0)));
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
