//! Assembly of ACM's [`Simulation`] from a [`Scene`]: the [`Model`], the initial events, and the
//! contact subsystem with its scheduler.

use std::borrow::Cow;

use glam::DVec3;

use super::contact::{Contact, ContactSetup, LayerLaw, TooClose};
use super::event_loop::EventLoop;
use super::simulation::Schedule;
use super::speculative::Speculative;
use super::{Simulation, Stats, WaitPolicy};
use crate::events::{EventKind, EventQueue, EventTable, Scheduler};
use crate::model::{
    describe_vertices, finest_clock_allowed, owner, ForceTarget, Model, ObjectRange,
};
use crate::penalty::PairKey;
use crate::scene::{ContactScheduler, Scene, SceneError, SpeedLimit};
use crate::state::VertexState;
use crate::RunStats;

/// Broad-phase windows last this many external-force clocks (at most a frame).
const BROAD_PHASE_WINDOW_TICKS: f64 = 4.0;

/// Builds the simulation of `scene`; an owned scene's meshes are freed as soon as they are copied
/// (before the element families and the broad phase, the peak of the build's memory).
pub(super) fn simulation(mut scene: Cow<'_, Scene>) -> Result<Simulation, SceneError> {
    let model = Model::build(&mut scene)?;
    let scene = &*scene;
    let (mut events, mut queue) = initial_events(&model);
    let contact = if scene.contact.enabled {
        let sched = &mut Scheduler {
            table: &mut events,
            queue: &mut queue,
        };
        Some(contact(scene, &model, sched)?)
    } else {
        None
    };
    let stats = Stats {
        run: RunStats::of(&model),
        ..Stats::default()
    };
    let schedule = match &contact {
        Some(c) if scene.contact.scheduler == ContactScheduler::Speculative => Schedule::Windows(
            Box::new(Speculative::new(c, model.state.len(), scene.frame_interval)),
        ),
        _ => Schedule::Certificates,
    };
    let event_loop = EventLoop {
        certificates: matches!(schedule, Schedule::Certificates),
        ticks: vec![0; model.forces.len()],
        next_key: vec![0; model.scripts.len()],
        events,
        queue,
        next_frame: 0,
        time: 0.0,
        scratch: Vec::new(),
        speed_limit: if contact.is_some() {
            SpeedLimit::of(scene)
        } else {
            SpeedLimit::none()
        },
        contact,
        kicked: Default::default(),
        audit: false,
        stop: None,
        wait: WaitPolicy::default(),
        processed: 0,
        queue_sizes: 0,
        watchdog: Default::default(),
        stats,
        model,
    };
    Ok(Simulation {
        event_loop,
        schedule,
    })
}

/// The event table and queue at the start: each force's first tick, each script's first key,
/// and the first frame, all at time 0 (or the key's time).
fn initial_events(model: &Model) -> (EventTable, EventQueue) {
    let (forces, scripts) = (&model.forces, &model.scripts);
    let mut events = EventTable::with_capacity(forces.len() + scripts.len() + 1);
    let mut queue = EventQueue::with_capacity(forces.len() + scripts.len() + 1);
    for i in 0..forces.len() {
        let handle = events.insert(EventKind::Force, i as u32);
        queue.push(handle.id, 0.0);
    }
    for (i, s) in scripts.iter().enumerate() {
        let handle = events.insert(EventKind::Script, i as u32);
        queue.push(handle.id, s.keys[0].0);
    }
    let snapshot = events.insert(EventKind::Snapshot, 0);
    queue.push(snapshot.id, 0.0);
    (events, queue)
}

/// The contact subsystem of `model` as `scene` sets it up, with its first certificates
/// scheduled on `sched`: refuses a start with primitives closer than `eta1`, and a first layer
/// whose clock cannot reach the scene's end.
fn contact(scene: &Scene, model: &Model, sched: &mut Scheduler<'_>) -> Result<Contact, SceneError> {
    let state = &model.state;
    let (objects, springs, hinges) = (&model.objects, &model.springs, &model.hinges);
    let (scripts, prescribed) = (&model.scripts, &model.prescribed);
    let external_clock = model.clocks.external;
    first_layer_makes_progress(scene, state)?;
    let setup = ContactSetup {
        objects: objects.clone(),
        law: LayerLaw {
            schedule: scene.contact.schedule()?,
            cor: scene.contact.cor,
            mu: scene.contact.friction,
            friction_cap: scene.contact.friction_cap,
            safety: scene.contact.safety,
            clocks: scene.contact.clocks,
            work_closure: scene.contact.work_closure,
            closure_restitution: scene.contact.closure_restitution,
            layer_super_events: scene.speed.layer_super_events,
            speed_limit: SpeedLimit::of(scene),
        },
        window: (BROAD_PHASE_WINDOW_TICKS * external_clock).min(scene.frame_interval),
        broad_phase: scene.contact.broad_phase,
        axis_ordering: scene.speed.axis_ordering,
        quality_loss: scene
            .speed
            .fuzzy_trajectories
            .then_some(scene.speed.quality_loss),
        short_circuit: scene.speed.short_circuit,
        parking: scene.speed.parking,
        triangle_pairs: scene.speed.triangle_pairs,
        start_energy: (scripts.is_empty() && prescribed.is_empty()).then(|| {
            start_energy(state, scene.gravity) + springs.energy(&state.x) + hinges.energy(&state.x)
        }),
        gravity: scene.gravity,
        speculative: scene.contact.scheduler == ContactScheduler::Speculative,
        kick_clocks: crate::model::kick_clocks(model),
    };
    let mut contact = Contact::new(
        setup,
        model.edges.clone(),
        model.triangles.clone(),
        state,
        sched,
    )
    .map_err(|close| too_close(&close, objects, scene))?;
    if scene.contact.closure_objects {
        contact.close_across_objects(objects.clone());
    }
    if scene.contact.closure_forces {
        let kicked = |f: &crate::model::Force| match f.target {
            ForceTarget::Springs(b) => springs.bins[b as usize].vertices.clone(),
            ForceTarget::Spring(e) => springs.kernel.ends[e as usize].to_vec(),
            ForceTarget::Hinges(b) => hinges.bins[b as usize].vertices.clone(),
            ForceTarget::Hinge(e) => hinges.kernel.verts[e as usize].to_vec(),
            ForceTarget::Gravity => (0..state.len() as u32).collect(),
            ForceTarget::VertexGravity(v) => vec![v],
            ForceTarget::Prescribed(p) => prescribed[p as usize].vertices.clone(),
            // Drag is not a potential: its ticks' work is meant.
            ForceTarget::Drag => Vec::new(),
        };
        let followed: Vec<(f64, Vec<u32>)> =
            model.forces.iter().map(|f| (f.clock, kicked(f))).collect();
        contact.follow_forces(&followed, state);
    }
    Ok(contact)
}

/// Kinetic plus gravitational energy (`-sum m g . x`) of the free vertices at the start.
fn start_energy(state: &VertexState, gravity: DVec3) -> f64 {
    (0..state.len())
        .filter(|&i| state.inv_mass[i] > 0.0)
        .map(|i| state.mass[i] * (0.5 * state.v[i].length_squared() - gravity.dot(state.x[i])))
        .sum()
}

/// The error for a pair that starts closer than `eta1`, naming the objects and primitives.
fn too_close(close: &TooClose, objects: &[ObjectRange], scene: &Scene) -> SceneError {
    let (what, a, b) = match close.key {
        PairKey::VertexTriangle(..) => {
            ("vertex and triangle", &close.verts[..1], &close.verts[1..])
        }
        PairKey::EdgeEdge(..) => ("two edges", &close.verts[..2], &close.verts[2..]),
    };
    SceneError::new(
        format!("object[{}]", owner(objects, a[0])),
        format!(
            "{what} start {:.3e} cm apart, closer than contact.eta1 = {}: {} and {}. \
             Separate the objects (or refine the mesh) so that non-adjacent primitives are at \
             least eta1 apart, or lower contact.eta1",
            close.distance,
            scene.contact.eta1,
            describe_vertices(objects, a),
            describe_vertices(objects, b)
        ),
    )
}

/// Refuses a first penalty layer whose clock could not carry the scene to its end (see
/// [`finest_clock_allowed`]); deeper layers tick faster but only while a pair is inside them.
fn first_layer_makes_progress(scene: &Scene, state: &VertexState) -> Result<(), SceneError> {
    let c = &scene.contact;
    let m_min = (0..state.len())
        .filter(|&v| state.inv_mass[v] > 0.0)
        .map(|v| state.mass[v])
        .fold(f64::INFINITY, f64::min);
    if !m_min.is_finite() {
        return Ok(());
    }
    let h1 = c.schedule()?.clock(1, m_min, c.safety);
    let needed = finest_clock_allowed(scene.duration);
    if h1 >= needed {
        return Ok(());
    }
    Err(SceneError::new(
        "contact.r1",
        format!(
            "the first penalty layer's clock is {h1:.3e} s (lightest vertex {m_min:.3e} g), \
             finer than the {needed:.3e} s a {} s run can make progress with: use r1 <= {:.3e}",
            scene.duration,
            c.r1 * (h1 / needed).powi(2)
        ),
    ))
}
