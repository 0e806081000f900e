//! Why acm refuses a scene or stops a run: one error type an embedder matches on ([`Error`]),
//! made of the scene's errors ([`SceneError`], [`ProfileError`]) and the run's ([`RunError`]).

use crate::scene::profile::ProfileError;
use crate::scene::SceneError;

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
    /// A synchronous or implicit step left a vertex beyond `crate::sync::steps::COORDINATE_LIMIT`
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
    /// (`Scene::resolvable_speed`): energy has run away, and
    /// the run stops rather than stall.
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
    /// (`Scene::resolvable_speed`): a pair could then cross a layer between two instants of
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
    /// A fixed-step method's fail-safe could not make a step collision-free
    /// (`sync.on_unresolved = "stop"`, or always for implicit contact): the step was not taken,
    /// so no frame intersects.
    #[error(
        "the {method} method failed at t = {time} s: {collisions} collision(s) remain in {step}, \
         starting with {first}; {reason}. The step was not taken, so no frame intersects. \
         {advice}"
    )]
    Unresolved {
        /// `synchronous`, `implicit` or `optimization-based`.
        method: &'static str,
        /// Start of the step.
        time: f64,
        /// The step, described (`the step`, or its length and halvings).
        step: String,
        /// Collisions left.
        collisions: usize,
        /// The first of them, described.
        first: String,
        /// Why the fail-safe gave up.
        reason: String,
        /// Which settings may get further.
        advice: &'static str,
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
    /// The flag of [`Stepper::stop_when`](crate::Stepper::stop_when) was set: the run stopped
    /// between two events or steps.
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

/// Why [`crate::Simulation::set_velocity`] refused a velocity; nothing was changed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SteerError {
    /// No vertex has that index.
    #[error("no vertex {vertex} (the simulation has {count})")]
    NoSuchVertex {
        /// The index asked for.
        vertex: usize,
        /// How many vertices there are.
        count: usize,
    },
    /// The vertex belongs to a fixed object or set.
    #[error("vertex {vertex} is fixed and cannot be steered")]
    Fixed {
        /// The vertex.
        vertex: usize,
    },
    /// A script moves the vertex and has a key still to come, which would replace the velocity.
    #[error(
        "vertex {vertex} is scripted, and its script's next key at t = {key:?} s would replace a \
         velocity set now; change the script, or steer the vertex after its last key"
    )]
    Scripted {
        /// The vertex.
        vertex: usize,
        /// The time of the script's next key (s).
        key: f64,
    },
    /// A component is NaN or infinite.
    #[error("the velocity of vertex {vertex} is not finite")]
    NotFinite {
        /// The vertex.
        vertex: usize,
    },
    /// Faster than contact can resolve in the scene (`crate::Simulation::speed_limit`).
    #[error(
        "the speed of vertex {vertex}, {speed:.3e} cm/s, is beyond the {limit:.3e} cm/s contact \
         can resolve in this scene"
    )]
    TooFast {
        /// The vertex.
        vertex: usize,
        /// The speed asked for (cm/s).
        speed: f64,
        /// The limit (cm/s).
        limit: f64,
    },
}

/// Anything acm can refuse or stop with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A profile file could not be read or parsed (names the file, line and key).
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// A mesh read or generated in code is invalid (names the element or argument).
    #[error(transparent)]
    Mesh(#[from] crate::mesh::MeshError),
    /// A scene is invalid or cannot be built (names the field, in profile terms).
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// A run stopped early.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A velocity set between runs was refused.
    #[error(transparent)]
    Steer(#[from] SteerError),
}
