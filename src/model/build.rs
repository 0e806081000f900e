//! Building a [`Model`] from a [`Scene`], step by step: the objects' vertices in global buffers,
//! what fixes, scripts or pushes them, the elastic elements and their stable clocks, and each
//! force's clock.

use std::borrow::Cow;

use glam::DVec3;

use super::contents::Model;
use super::forces::{Force, ForceTarget};
use super::objects::{owner, ObjectRange};
use super::size::{ClockRange, Clocks, ModelSize};
use crate::forces::external::{Drag, PrescribedForce, ScriptedMotion};
use crate::forces::{
    bin_clock, clock_bin, ElementKernel, HingeFamily, HingeKernel, SpringFamily, SpringKernel,
};
use crate::mesh::{lumped_masses, Topology, TriMesh, TriangleList};
use crate::scene::{Scene, SceneError, VertexSet};
use crate::state::{VertexKind, VertexState};

/// The external clock (s) when no elastic clock sets its pace: what a hundredth of the frame
/// interval gave the walkthrough's 0.02 s frames, now independent of the frames.
const EXTERNAL_CLOCK_WITHOUT_ELEMENTS: f64 = 2e-4;

/// The objects laid out in the global buffers.
struct Placed {
    objects: Vec<ObjectRange>,
    state: VertexState,
    triangles: Vec<[u32; 3]>,
    topologies: Vec<Topology>,
}

/// The elastic elements and each one's clock.
struct Elements {
    springs: SpringKernel,
    hinges: HingeKernel,
    spring_clocks: Vec<f64>,
    hinge_clocks: Vec<f64>,
}

impl Model {
    /// Builds the model of `scene`, validated first. An owned scene's meshes are freed as soon
    /// as they are copied (before the element families and any broad phase, the peak of a
    /// build's memory).
    ///
    /// # Errors
    ///
    /// The scene's validation errors, and clocks or masses double precision cannot carry (a
    /// density out of range, an element too stiff to reach the scene's end).
    pub(crate) fn build(scene: &mut Cow<'_, Scene>) -> Result<Self, SceneError> {
        if !scene.rigid.bodies.is_empty() {
            crate::rigid::shells::replace_bodies(scene.to_mut())?;
        }
        scene.validate()?;
        let Placed {
            objects,
            mut state,
            triangles,
            topologies,
        } = place_objects(scene)?;
        if let Cow::Owned(scene) = scene {
            for object in &mut scene.objects {
                object.mesh = TriMesh::default();
            }
        }
        let scene = &**scene;
        let (scripts, prescribed) = constrain(scene, &objects, &mut state);
        let drag = drag(scene, &objects, &state);
        let elements = elements(scene, &objects, &topologies, &state)?;
        let edges = if scene.contact.enabled {
            global_edges(&topologies, &objects)
        } else {
            Vec::new()
        };
        // The topologies are not needed past here: free them before the families and any
        // broad phase.
        drop(topologies);
        let binned = scene.speed.super_elements && scene.speed.clock_bins;
        let stretching = ClockRange::of(&elements.spring_clocks);
        let bending = ClockRange::of(&elements.hinge_clocks);
        let springs = SpringFamily::new(
            elements.springs,
            &elements.spring_clocks,
            &state.x,
            state.len(),
            binned,
        );
        let hinges = HingeFamily::new(
            elements.hinges,
            &elements.hinge_clocks,
            &state.x,
            state.len(),
            binned,
        );
        let external = external_clock(scene, stretching, bending, &drag, &state);
        let mut gravity_clock = if binned && scene.integrator.clock.is_none() {
            median_elastic_step(&springs, &hinges, &state).unwrap_or(external)
        } else {
            external
        };
        if scene.integrator.clock.is_none() {
            if let Some(resting) = resting_layer_clock(scene, &state) {
                gravity_clock = gravity_clock.min(resting);
            }
        }
        let mut model = Self {
            name: scene.name.clone(),
            objects,
            triangles: TriangleList::from(triangles),
            edges,
            state,
            springs,
            hinges,
            gravity: scene.gravity,
            prescribed,
            drag,
            scripts,
            forces: Vec::new(),
            frame_interval: scene.frame_interval,
            clocks: Clocks {
                stretching,
                bending,
                external,
                gravity: gravity_clock,
            },
            size: ModelSize::default(),
        };
        model.forces = forces(
            scene,
            &model,
            &elements.spring_clocks,
            &elements.hinge_clocks,
        );
        model.size = ModelSize {
            vertices: model.state.len(),
            free_vertices: model.state.inv_mass.iter().filter(|&&w| w > 0.0).count(),
            triangles: model.triangles.len(),
            springs: model.springs.len(),
            hinges: model.hinges.len(),
            force_events: model.forces.len(),
        };
        Ok(model)
    }
}

/// Lays every object's vertices and triangles out in the global buffers, with its masses and
/// start velocity, and builds its topology.
fn place_objects(scene: &Scene) -> Result<Placed, SceneError> {
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
    Ok(Placed {
        objects,
        state,
        triangles,
        topologies,
    })
}

/// Fixes the vertices of the scene's `[[fixed]]` sets, hands the scripted ones to their scripts
/// (both get no inverse mass and no start velocity), and places the prescribed forces.
fn constrain(
    scene: &Scene,
    objects: &[ObjectRange],
    state: &mut VertexState,
) -> (Vec<ScriptedMotion>, Vec<PrescribedForce>) {
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
    (scripts, prescribed)
}

/// Air drag on the free vertices of objects with a drag coefficient.
fn drag(scene: &Scene, objects: &[ObjectRange], state: &VertexState) -> Drag {
    let mut drag = Drag::default();
    for (object, range) in scene.objects.iter().zip(objects) {
        if object.material.drag > 0.0 {
            for i in range.first_vertex..range.first_vertex + range.vertex_count {
                let v = i as usize;
                if state.inv_mass[v] > 0.0 {
                    drag.push(i, object.material.drag, state.mass[v], state.x[v]);
                }
            }
        }
    }
    drag
}

/// The springs along every edge and the hinges across every interior edge of the free objects
/// (those that move a free vertex), and each element's clock: `integrator.clock`, or its stable
/// clock. Refuses clocks a run cannot reach the scene's end with.
fn elements(
    scene: &Scene,
    objects: &[ObjectRange],
    topologies: &[Topology],
    state: &VertexState,
) -> Result<Elements, SceneError> {
    let mut springs = SpringKernel::default();
    let mut hinges = HingeKernel::default();
    for ((object, range), topology) in scene.objects.iter().zip(objects).zip(topologies) {
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
        .map(|(&h, v)| (h / integ.safety, owner(objects, v)));
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
    Ok(Elements {
        springs,
        hinges,
        spring_clocks,
        hinge_clocks,
    })
}

/// The global edges of every object (for contact).
fn global_edges(topologies: &[Topology], objects: &[ObjectRange]) -> Vec<[u32; 2]> {
    topologies
        .iter()
        .zip(objects)
        .flat_map(|(topology, range)| {
            let offset = range.first_vertex;
            topology.edges.iter().map(move |e| e.map(|v| v + offset))
        })
        .collect()
}

/// The clock of drag and the prescribed forces (and the synchronous baselines' default step):
/// `integrator.clock`, or the finest elastic clock ([`EXTERNAL_CLOCK_WITHOUT_ELEMENTS`] without
/// elastic elements), no coarser than drag's stable clock. It does not depend on the frame
/// interval: frames are sampled from the trajectory, so choosing them never changes the motion.
fn external_clock(
    scene: &Scene,
    stretching: Option<ClockRange>,
    bending: Option<ClockRange>,
    drag: &Drag,
    state: &VertexState,
) -> f64 {
    let integ = scene.integrator;
    let elastic_min = [stretching, bending]
        .into_iter()
        .flatten()
        .map(|range| range.min)
        .reduce(f64::min);
    integ.clock.unwrap_or_else(|| {
        let mut pace = elastic_min.unwrap_or(EXTERNAL_CLOCK_WITHOUT_ELEMENTS);
        let drag_rate = drag.max_rate(state);
        if drag_rate > 0.0 {
            pace = pace.min(integ.safety / drag_rate);
        }
        pace
    })
}

/// Every force of `model` and its clock: the families' clock bins (with super-elements) or
/// each element at its own clock (`spring_clocks`, `hinge_clocks`), gravity (one force, or one
/// per free vertex without super-elements), drag, and each prescribed force.
fn forces(scene: &Scene, model: &Model, spring_clocks: &[f64], hinge_clocks: &[f64]) -> Vec<Force> {
    let mut forces = Vec::new();
    let mut push = |target, clock| forces.push(Force { target, clock });
    let super_elements = scene.speed.super_elements;
    if super_elements {
        for (b, bin) in model.springs.bins.iter().enumerate() {
            push(ForceTarget::Springs(b as u8), bin.clock);
        }
        for (b, bin) in model.hinges.bins.iter().enumerate() {
            push(ForceTarget::Hinges(b as u8), bin.clock);
        }
    } else {
        // Unbinned, so the families keep the elements' order. An element with an infinite
        // clock (a degenerate hinge) exerts no force and has no event: its first tick would
        // be at `0 * inf`, no time at all.
        for (e, h) in own_clocks(scene, spring_clocks).enumerate() {
            if h.is_finite() {
                push(ForceTarget::Spring(e as u32), h);
            }
        }
        for (e, h) in own_clocks(scene, hinge_clocks).enumerate() {
            if h.is_finite() {
                push(ForceTarget::Hinge(e as u32), h);
            }
        }
    }
    let state = &model.state;
    let free_vertices = state.inv_mass.iter().filter(|&&w| w > 0.0).count();
    if scene.gravity != DVec3::ZERO && free_vertices > 0 {
        if super_elements {
            push(ForceTarget::Gravity, model.clocks.gravity);
        } else {
            for v in (0..state.len()).filter(|&v| state.inv_mass[v] > 0.0) {
                push(ForceTarget::VertexGravity(v as u32), model.clocks.gravity);
            }
        }
    }
    if !model.drag.is_empty() {
        push(ForceTarget::Drag, model.clocks.external);
    }
    for f in 0..model.prescribed.len() {
        push(ForceTarget::Prescribed(f as u32), model.clocks.external);
    }
    forces
}

/// The clocks of a family's elements ticked one element an event: each element's stable clock
/// rounded down to its power-of-two bin's (as the super-elements tick) under
/// `speed.clock_bins`, else as it is. Clocks a power of two apart keep the energy of undamped
/// shells flat, where a spread of nearby clocks lets the integrator's resonances (Fong, Darve
/// and Lew 2008) pump energy in.
fn own_clocks<'a>(scene: &Scene, clocks: &'a [f64]) -> impl Iterator<Item = f64> + 'a {
    let min = clocks.iter().copied().fold(f64::INFINITY, f64::min);
    let binned = scene.speed.clock_bins;
    clocks.iter().map(move |&h| {
        if binned && h.is_finite() {
            bin_clock(clock_bin(h, min), min)
        } else {
            h
        }
    })
}

/// `integrator.clock` may exceed the stable clock of the stiffest element by this factor (the
/// element-by-element bound is conservative); beyond it energy grows without bound.
const MAX_CLOCK_OVER_STABLE: f64 = 4.0;

/// Most ticks the finest elastic clock may take over a run: beyond it a scene cannot finish in
/// any reasonable time (the slowest shipped scene takes about 4e5).
const MAX_TICKS: f64 = 1e9;

/// The finest clock a run of `duration` s can make progress with: at most [`MAX_TICKS`] ticks,
/// and a few thousand ulps of the end time (below that, `n * h` cannot advance time reliably).
pub(crate) fn finest_clock_allowed(duration: f64) -> f64 {
    (duration / MAX_TICKS).max(duration * 4096.0 * f64::EPSILON)
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

/// With contact on and gravity, the clock of the deepest penalty layer a free vertex rests in
/// under its own weight (`None` otherwise): gravity ticks no coarser. A vertex resting in its
/// layers under coarser gravity kicks rings in them: each kick drives it in by `g h`, the
/// layers throw it back out, and with `contact.cor < 1` (no push while separating) it floats
/// without any normal force, and so without friction, for most of the interval; a square
/// resting on an incline whose gravity ticked every 5 ms at its springs' pace got its friction
/// in bursts and crept downhill (`docs/contact.md`, "Contact that comes to rest"). The layer
/// is the first whose stack, with the heaviest free vertex's weight on it, holds it above the
/// next layer's thickness.
fn resting_layer_clock(scene: &Scene, state: &VertexState) -> Option<f64> {
    if !scene.contact.enabled || scene.gravity == DVec3::ZERO {
        return None;
    }
    let free = (0..state.len()).filter(|&v| state.inv_mass[v] > 0.0);
    let (m_min, m_max) = free
        .map(|v| state.mass[v])
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), m| {
            (lo.min(m), hi.max(m))
        });
    if !m_min.is_finite() {
        return None;
    }
    let c = &scene.contact;
    let schedule = c.schedule().ok()?;
    let weight = m_max * scene.gravity.length();
    // The deepest layer that can matter: far past any schedule's resting depth.
    const DEEPEST: u32 = 64;
    let rests = |l: u32| {
        let below = schedule.eta(l + 1);
        let held: f64 = (1..=l)
            .map(|k| schedule.r(k) * (schedule.eta(k) - below))
            .sum();
        held >= weight
    };
    let layer = (1..DEEPEST).find(|&l| rests(l)).unwrap_or(DEEPEST);
    let h = schedule.clock_by(c.clocks, layer, m_min, c.safety);
    (h > 0.0).then_some(h)
}

/// Per vertex: the longest interval between the regular kicks that load it, the coarser of
/// gravity's clock and its elastic step (the finest clock bin among the elements that touch
/// it); 0 for fixed and scripted vertices. Static friction budgets over it: a pair's layers
/// hold what these kicks deliver if their friction over that interval could
/// (`PenaltyParams::kick`).
pub(crate) fn kick_clocks(model: &Model) -> Vec<f64> {
    let state = &model.state;
    let step = elastic_steps(&model.springs, &model.hinges, state);
    let gravity = if model.gravity == DVec3::ZERO {
        0.0
    } else {
        model.clocks.gravity
    };
    (0..state.len())
        .map(|v| {
            if state.inv_mass[v] > 0.0 {
                let elastic = if step[v].is_finite() { step[v] } else { 0.0 };
                elastic.max(gravity)
            } else {
                0.0
            }
        })
        .collect()
}

/// Each vertex's elastic step: the finest clock bin among the elements that touch it
/// (infinite where none does).
fn elastic_steps(springs: &SpringFamily, hinges: &HingeFamily, state: &VertexState) -> Vec<f64> {
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
    step
}

/// The median over free vertices of each vertex's elastic step (the finest clock bin among the
/// elements that touch it): gravity's pace when elastic clocks are binned (DESIGN §4). Gravity
/// is a linear potential, stable at any clock; sampling it as finely as the typical vertex
/// already moves keeps its error at the elastic discretisation's, while the stiffest few
/// elements no longer make every vertex take their clock. `None` when no elastic element moves
/// a free vertex.
fn median_elastic_step(
    springs: &SpringFamily,
    hinges: &HingeFamily,
    state: &VertexState,
) -> Option<f64> {
    let step = elastic_steps(springs, hinges, state);
    let mut free: Vec<f64> = (0..state.len())
        .filter(|&v| state.inv_mass[v] > 0.0 && step[v].is_finite())
        .map(|v| step[v])
        .collect();
    free.sort_by(f64::total_cmp);
    free.get(free.len() / 2).copied()
}
