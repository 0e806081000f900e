//! Assembly of a [`Simulation`] from a [`Scene`]: global buffers, masses, element families,
//! clocks, and the initial events.

use std::borrow::Cow;

use glam::DVec3;

use super::contact::{Contact, ContactSetup, TooClose};
use super::speculative::Speculative;
use super::{
    describe_vertices, ClockRange, Clocks, ForceEvent, ForceTarget, ModelSize, ObjectRange,
    Simulation, Stats, WaitPolicy,
};
use crate::events::{EventKind, EventQueue, EventTable, Scheduler};
use crate::forces::external::{Drag, PrescribedForce, ScriptedMotion};
use crate::forces::{ElementKernel, HingeFamily, HingeKernel, SpringFamily, SpringKernel};
use crate::mesh::{lumped_masses, Topology, TriMesh, TriangleList};
use crate::penalty::PairKey;
use crate::scene::{ContactScheduler, Scene, SceneError, SpeedLimit, VertexSet};
use crate::state::{VertexKind, VertexState};

/// Broad-phase windows last this many external-force clocks (at most a frame).
const BROAD_PHASE_WINDOW_TICKS: f64 = 4.0;

/// External forces tick this many times per frame when no elastic clock sets their pace.
const EXTERNAL_TICKS_PER_FRAME: f64 = 100.0;

/// Builds the simulation of `scene`; an owned scene's meshes are freed as soon as they are copied
/// (before the element families and the broad phase, the peak of the build's memory).
pub(super) fn simulation(mut scene: Cow<'_, Scene>) -> Result<Simulation, SceneError> {
    scene.validate()?;
    let mut objects = Vec::with_capacity(scene.objects.len());
    let mut state = VertexState::default();
    let mut triangles = Vec::with_capacity(scene.triangle_count());
    let mut topologies = Vec::with_capacity(scene.objects.len());
    for (i, object) in scene.objects.iter().enumerate() {
        let first_vertex = state.len() as u32;
        let mesh = &object.mesh;
        objects.push(ObjectRange {
            name: object.name.clone(),
            first_vertex,
            vertex_count: mesh.positions.len() as u32,
            first_triangle: triangles.len() as u32,
            triangle_count: mesh.triangles.len() as u32,
        });
        triangles.extend(mesh.triangles.iter().map(|t| t.map(|v| v + first_vertex)));
        let masses = match object.particle_mass {
            Some(m) => vec![m],
            None => lumped_masses(mesh, object.material.density),
        };
        if let Some(m) = masses.iter().find(|m| !object.fixed && !m.is_normal()) {
            return Err(SceneError::new(
                format!("object[{i}].material.density"),
                format!(
                    "gives a vertex the mass {m:e} g, outside the range of double precision; \
                     use a density between 1e-30 and 1e30 g/cm^2"
                ),
            ));
        }
        let kind = if object.fixed {
            VertexKind::Fixed
        } else {
            VertexKind::Free
        };
        for (&x, &m) in mesh.positions.iter().zip(&masses) {
            state.x.push(x);
            state.t.push(0.0);
            state.v.push(if object.fixed {
                DVec3::ZERO
            } else {
                object.velocity
            });
            state.mass.push(m);
            state
                .inv_mass
                .push(if object.fixed { 0.0 } else { 1.0 / m });
            state.kind.push(kind);
        }
        topologies.push(if object.particle_mass.is_some() {
            Topology::default()
        } else {
            Topology::build(mesh).map_err(|e| SceneError::mesh(i, &e))?
        });
    }
    if let Cow::Owned(scene) = &mut scene {
        for object in &mut scene.objects {
            object.mesh = TriMesh::default();
        }
    }
    let scene = &*scene;
    let global = |set: &VertexSet| -> Vec<u32> {
        let offset = objects[set.object].first_vertex;
        set.vertices.iter().map(|v| v + offset).collect()
    };
    for set in &scene.fixed {
        for v in global(set) {
            let v = v as usize;
            state.kind[v] = VertexKind::Fixed;
            state.inv_mass[v] = 0.0;
            state.v[v] = DVec3::ZERO;
        }
    }
    let scripts: Vec<ScriptedMotion> = scene
        .scripts
        .iter()
        .map(|s| {
            let vertices = global(&s.set);
            for &v in &vertices {
                let v = v as usize;
                state.kind[v] = VertexKind::Scripted;
                state.inv_mass[v] = 0.0;
                state.v[v] = DVec3::ZERO;
            }
            ScriptedMotion {
                vertices,
                keys: s.keys.clone(),
            }
        })
        .collect();
    let prescribed: Vec<PrescribedForce> = scene
        .forces
        .iter()
        .map(|f| PrescribedForce {
            vertices: global(&f.set),
            force: f.force,
            start: f.start,
            end: f.end,
        })
        .collect();

    let mut drag = Drag::default();
    for (object, range) in scene.objects.iter().zip(&objects) {
        if object.material.drag > 0.0 {
            for i in range.first_vertex..range.first_vertex + range.vertex_count {
                let v = i as usize;
                if state.inv_mass[v] > 0.0 {
                    drag.push(i, object.material.drag, state.mass[v], state.x[v]);
                }
            }
        }
    }
    let mut springs = SpringKernel::default();
    let mut hinges = HingeKernel::default();
    for ((object, range), topology) in scene.objects.iter().zip(&objects).zip(&topologies) {
        if object.fixed {
            continue;
        }
        let m = &object.material;
        let offset = range.first_vertex;
        let moves = |v: u32| state.inv_mass[v as usize] > 0.0;
        if m.stretch > 0.0 || m.stretch_damping > 0.0 {
            for &[a, b] in &topology.edges {
                let (a, b) = (a + offset, b + offset);
                if moves(a) || moves(b) {
                    springs.push(a, b, &state.x, m.stretch, m.stretch_damping);
                }
            }
        }
        if m.bend > 0.0 || m.bend_damping > 0.0 {
            for hinge in &topology.hinges {
                let hinge = hinge.map(|v| v + offset);
                if hinge.iter().any(|&v| moves(v)) {
                    hinges.push(hinge, &state.x, m.bend, m.bend_damping);
                }
            }
        }
    }
    let integ = scene.integrator;
    let stable_springs =
        springs.stable_clocks(&springs.inverse_mass_shares(&state.inv_mass), integ.safety);
    let stable_hinges = hinges.stable_clocks(
        &state.x,
        &hinges.inverse_mass_shares(&state.inv_mass),
        integ.safety,
    );
    // The finest stable element, and the object it belongs to (for messages).
    let finest_stable = stable_springs
        .iter()
        .zip(springs.ends.iter().map(|e| e[0]))
        .chain(stable_hinges.iter().zip(hinges.verts.iter().map(|h| h[0])))
        .min_by(|a, b| a.0.total_cmp(b.0))
        .map(|(&h, v)| (h / integ.safety, owner(&objects, v)));
    if let (Some(clock), Some((stable, _))) = (integ.clock, finest_stable) {
        if clock > MAX_CLOCK_OVER_STABLE * stable {
            return Err(SceneError::new(
                "integrator.clock",
                format!(
                    "{clock:e} s is more than {MAX_CLOCK_OVER_STABLE} times the stable clock of \
                     the stiffest element ({stable:.3e} s): the run would gain energy without \
                     bound. Use at most {:.3e} s, or leave integrator.clock out",
                    MAX_CLOCK_OVER_STABLE * stable
                ),
            ));
        }
    }
    if let Some((stable, object)) = finest_stable {
        makes_progress(scene, stable * integ.safety, object)?;
    }
    let uniform = |n: usize| integ.clock.map(|h| vec![h; n]);
    let spring_clocks = uniform(springs.ends.len()).unwrap_or(stable_springs);
    let hinge_clocks = uniform(hinges.verts.len()).unwrap_or(stable_hinges);
    let super_elements = scene.speed.super_elements;
    let binned = super_elements && scene.speed.clock_bins;
    let springs = SpringFamily::new(springs, &spring_clocks, &state.x, state.len(), binned);
    let hinges = HingeFamily::new(hinges, &hinge_clocks, &state.x, state.len(), binned);
    // The families keep no per-element clocks: what is needed of them is taken here.
    let (stretching, bending) = (
        ClockRange::of(&spring_clocks),
        ClockRange::of(&hinge_clocks),
    );
    let elastic_min = [stretching, bending]
        .into_iter()
        .flatten()
        .map(|range| range.min)
        .reduce(f64::min);
    let external_clock = integ.clock.unwrap_or_else(|| {
        let mut pace = elastic_min.unwrap_or(scene.frame_interval / EXTERNAL_TICKS_PER_FRAME);
        let drag_rate = drag.max_rate(&state);
        if drag_rate > 0.0 {
            pace = pace.min(integ.safety / drag_rate);
        }
        dividing(scene.frame_interval, pace)
    });

    let mut forces = Vec::new();
    let mut push_force = |target, clock| {
        forces.push(ForceEvent {
            target,
            clock,
            tick: 0,
        })
    };
    if super_elements {
        for (b, bin) in springs.bins.iter().enumerate() {
            push_force(ForceTarget::Springs(b as u8), bin.clock);
        }
        for (b, bin) in hinges.bins.iter().enumerate() {
            push_force(ForceTarget::Hinges(b as u8), bin.clock);
        }
    } else {
        // Unbinned, so the families keep the elements' order. An element with an infinite
        // clock (a degenerate hinge) exerts no force and has no event: its first tick would
        // be at `0 * inf`, no time at all.
        for (e, &h) in spring_clocks.iter().enumerate() {
            if h.is_finite() {
                push_force(ForceTarget::Spring(e as u32), h);
            }
        }
        for (e, &h) in hinge_clocks.iter().enumerate() {
            if h.is_finite() {
                push_force(ForceTarget::Hinge(e as u32), h);
            }
        }
    }
    drop((spring_clocks, hinge_clocks));
    let free_vertices = state.inv_mass.iter().filter(|&&w| w > 0.0).count();
    let gravity_clock = if binned && integ.clock.is_none() {
        median_elastic_step(&springs, &hinges, &state)
            .map_or(external_clock, |h| dividing(scene.frame_interval, h))
    } else {
        external_clock
    };
    if scene.gravity != DVec3::ZERO && free_vertices > 0 {
        if super_elements {
            push_force(ForceTarget::Gravity, gravity_clock);
        } else {
            for v in (0..state.len()).filter(|&v| state.inv_mass[v] > 0.0) {
                push_force(ForceTarget::VertexGravity(v as u32), gravity_clock);
            }
        }
    }
    if !drag.is_empty() {
        push_force(ForceTarget::Drag, external_clock);
    }
    for f in 0..prescribed.len() {
        push_force(ForceTarget::Prescribed(f as u32), external_clock);
    }

    let mut events = EventTable::with_capacity(forces.len() + scripts.len() + 1);
    let mut queue = EventQueue::with_capacity(forces.len() + scripts.len() + 1);
    for (i, f) in forces.iter().enumerate() {
        let handle = events.insert(EventKind::Force, i as u32);
        queue.push(handle.id, f.next_time());
    }
    for (i, s) in scripts.iter().enumerate() {
        let handle = events.insert(EventKind::Script, i as u32);
        queue.push(handle.id, s.keys[0].0);
    }
    let snapshot = events.insert(EventKind::Snapshot, 0);
    queue.push(snapshot.id, 0.0);

    // One copy, shared with the broad phase.
    let triangles: TriangleList = triangles.into();
    let edges: Vec<[u32; 2]> = if scene.contact.enabled {
        topologies
            .iter()
            .zip(&objects)
            .flat_map(|(topology, range)| {
                let offset = range.first_vertex;
                topology.edges.iter().map(move |e| e.map(|v| v + offset))
            })
            .collect()
    } else {
        Vec::new()
    };
    // The topologies are not needed past here: free them before the broad phase, whose build
    // is the peak of the process's memory.
    drop(topologies);
    let contact = if scene.contact.enabled {
        first_layer_makes_progress(scene, &state)?;
        let setup = ContactSetup {
            objects: objects.clone(),
            speed_limit: SpeedLimit::of(scene),
            schedule: scene.contact.schedule()?,
            cor: scene.contact.cor,
            mu: scene.contact.friction,
            friction_cap: scene.contact.friction_cap,
            safety: scene.contact.safety,
            clocks: scene.contact.clocks,
            work_closure: scene.contact.work_closure,
            closure_restitution: scene.contact.closure_restitution,
            window: (BROAD_PHASE_WINDOW_TICKS * external_clock).min(scene.frame_interval),
            broad_phase: scene.contact.broad_phase,
            layer_super_events: scene.speed.layer_super_events,
            axis_ordering: scene.speed.axis_ordering,
            quality_loss: scene
                .speed
                .fuzzy_trajectories
                .then_some(scene.speed.quality_loss),
            short_circuit: scene.speed.short_circuit,
            parking: scene.speed.parking,
            triangle_pairs: scene.speed.triangle_pairs,
            start_energy: (scripts.is_empty() && prescribed.is_empty()).then(|| {
                start_energy(&state, scene.gravity)
                    + springs.energy(&state.x)
                    + hinges.energy(&state.x)
            }),
            gravity: scene.gravity,
            speculative: scene.contact.scheduler == ContactScheduler::Speculative,
        };
        let mut contact = Contact::new(
            setup,
            edges,
            triangles.clone(),
            &state,
            &mut Scheduler {
                table: &mut events,
                queue: &mut queue,
            },
        )
        .map_err(|close| too_close(&close, &objects, scene))?;
        if scene.contact.closure_objects {
            contact.close_across_objects(objects.clone());
        }
        if scene.contact.closure_forces {
            let kicked = |f: &ForceEvent| match f.target {
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
                forces.iter().map(|f| (f.clock, kicked(f))).collect();
            contact.follow_forces(&followed, &state);
        }
        Some(contact)
    } else {
        None
    };

    let stats = Stats {
        scene: scene.name.clone(),
        model: ModelSize {
            vertices: state.len(),
            free_vertices,
            triangles: triangles.len(),
            springs: springs.len(),
            hinges: hinges.len(),
            force_events: forces.len(),
        },
        clocks: Clocks {
            stretching,
            bending,
            external: external_clock,
            gravity: gravity_clock,
        },
        ..Stats::default()
    };
    let speculative = contact
        .as_ref()
        .filter(|_| scene.contact.scheduler == ContactScheduler::Speculative)
        .map(|c| Box::new(Speculative::new(c, state.len(), scene.frame_interval)));
    Ok(Simulation {
        name: scene.name.clone(),
        next_key: vec![0; scripts.len()],
        objects,
        triangles,
        state,
        springs,
        hinges,
        gravity: scene.gravity,
        prescribed,
        drag,
        scripts,
        forces,
        events,
        queue,
        frame_interval: scene.frame_interval,
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
        speculative,
        audit: false,
        stop: None,
        wait: WaitPolicy::default(),
        processed: 0,
        queue_sizes: 0,
        watchdog: Default::default(),
        stats,
    })
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

/// `integrator.clock` may exceed the stable clock of the stiffest element by this factor (the
/// element-by-element bound is conservative); beyond it energy grows without bound.
const MAX_CLOCK_OVER_STABLE: f64 = 4.0;

/// Most ticks the finest elastic clock may take over a run: beyond it a scene cannot finish in
/// any reasonable time (the slowest shipped scene takes about 4e5).
const MAX_TICKS: f64 = 1e9;

/// The finest clock a run of `duration` s can make progress with: at most [`MAX_TICKS`] ticks,
/// and a few thousand ulps of the end time (below that, `n * h` cannot advance time reliably).
fn finest_clock_allowed(duration: f64) -> f64 {
    (duration / MAX_TICKS).max(duration * 4096.0 * f64::EPSILON)
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

/// The index of the object that vertex `v` (global) belongs to.
fn owner(objects: &[ObjectRange], v: u32) -> usize {
    objects.partition_point(|o| o.first_vertex <= v) - 1
}

/// Refuses a finest elastic clock `clock` (of an element of object `object`) that cannot carry
/// the scene to its end: more than [`MAX_TICKS`] ticks, or too small to advance the scene's
/// last time in double precision. The message says what material would work.
fn makes_progress(scene: &Scene, clock: f64, object: usize) -> Result<(), SceneError> {
    let duration = scene.duration;
    let needed = finest_clock_allowed(duration);
    if clock >= needed {
        return Ok(());
    }
    // Clocks scale as sqrt(density / stiffness).
    let factor = (needed / clock).powi(2);
    let m = &scene.objects[object].material;
    let advice = if factor.is_finite() {
        format!(
            "for example density >= {:.3e} (now {:e}), or stretch <= {:.3e} and bend <= {:.3e} \
             (now {:e} and {:e})",
            m.density * factor,
            m.density,
            m.stretch / factor,
            m.bend / factor,
            m.stretch,
            m.bend
        )
    } else {
        format!(
            "clocks scale as sqrt(density / stiffness), and density {:e} against stretch {:e} \
             and bend {:e} is beyond double precision",
            m.density, m.stretch, m.bend
        )
    };
    Err(SceneError::new(
        format!("object[{object}].material"),
        format!(
            "the stiffest element of object {:?} has a stable clock of {clock:.3e} s: {:.3e} \
             ticks over the scene's {duration} s, more than the {MAX_TICKS:e} a run can take. \
             A clock of at least {needed:.3e} s works: {advice}",
            scene.objects[object].name,
            duration / clock,
        ),
    ))
}

/// The largest clock no larger than `pace` that divides `frame_interval`.
fn dividing(frame_interval: f64, pace: f64) -> f64 {
    frame_interval / (frame_interval / pace).ceil()
}

/// The median over free vertices of each vertex's elastic step (the finest clock bin among the
/// elements that touch it): gravity's pace when elastic clocks are binned, rounded down to divide
/// the frame interval (DESIGN §4). Gravity is a linear potential, stable at any clock; sampling
/// it as finely as the typical vertex already moves keeps its error at the elastic
/// discretisation's, while the stiffest few elements no longer make every vertex take their
/// clock. `None` when no elastic element moves a free vertex.
fn median_elastic_step(
    springs: &SpringFamily,
    hinges: &HingeFamily,
    state: &VertexState,
) -> Option<f64> {
    let mut step = vec![f64::INFINITY; state.len()];
    let mut lower = |vertices: &[u32], h: f64| {
        for &v in vertices {
            step[v as usize] = step[v as usize].min(h);
        }
    };
    for bin in &springs.bins {
        lower(&bin.vertices, bin.clock);
    }
    for bin in &hinges.bins {
        lower(&bin.vertices, bin.clock);
    }
    let mut free: Vec<f64> = (0..state.len())
        .filter(|&v| state.inv_mass[v] > 0.0 && step[v].is_finite())
        .map(|v| step[v])
        .collect();
    free.sort_by(f64::total_cmp);
    free.get(free.len() / 2).copied()
}
