//! The synchronous baseline (thesis ch. 3) on whole scenes: rigid impact zones keep every step
//! end free of intersections, and inelastic projection conserves momentum.

mod common;

use acm::check::{audit_positions, AuditReport};
use acm::mesh;
use acm::prelude::{FrameSource, Stepper};
use acm::scene::{profile, FailSafe, Material, Method, Scene, SceneObject};
use acm::sync::SyncSimulation;
use acm::{Frame, FrameSink, RunError};
use common::profiles_dir;
use glam::{DQuat, DVec3};

/// Audits every frame exactly.
struct Audit(AuditReport);

impl FrameSink for Audit {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        audit_positions(
            frame.positions,
            frame.model().triangles(),
            0.0,
            frame.index,
            &mut self.0,
        )
        .expect("finite frames");
        Ok(())
    }
}

/// The ribbon falls into its trough with a thin proximity layer (repulsions stop little) and no
/// iterated impulses, so the rigid impact zones resolve every collision; one frame per step,
/// each audited exactly.
#[test]
fn rigid_impact_zones_leave_no_intersection_at_step_ends_on_the_ribbon() {
    let overrides = [
        "integrator=sync",
        "sync.failsafe=\"impact_zones\"",
        "sync.thickness=0.003",
        "sync.max_ccd_iterations=0",
        "sync.step=1e-4",
        "scene.frame_interval=1e-4",
    ]
    .map(String::from);
    let scene = profile::load(&profiles_dir().join("sync_ribbon.toml"), &overrides).unwrap();
    assert_eq!(scene.integrator.method, Method::Sync);
    let mut sim = SyncSimulation::new(&scene).unwrap();
    assert_eq!(sim.step(), 1e-4);
    let mut audit = Audit(AuditReport::new());
    sim.run_until(0.3, &mut audit).unwrap();
    let f = sim.stats().filter;
    assert_eq!(audit.0.frames, 3001, "every step end is audited");
    assert!(
        f.failsafe_steps > 100 && f.largest_zone > 1,
        "the fail-safe did the work: {f:?}"
    );
    assert_eq!(f.unresolved_steps, 0);
    assert_eq!(audit.0.intersecting_pairs, 0, "{:?}", audit.0.first_bad);
}

/// Gravity of 1e200 cm/s^2 moves the particle 4e192 cm in its first step, where the cubics of
/// continuous collision detection overflow: it once fell through the floor unseen with exit 0.
/// The run now stops at the end of that step, before a later one, and writes no frame after the
/// start.
#[test]
fn a_step_beyond_the_range_collision_detection_resolves_stops_the_run() {
    let overrides = [
        "integrator=sync",
        "scene.gravity=[0.0, -1e200, 0.0]",
        "sync.step=2e-4",
    ]
    .map(String::from);
    let scene = profile::load(&profiles_dir().join("particle_floor.toml"), &overrides).unwrap();
    let mut sim = SyncSimulation::new(&scene).unwrap();
    let mut audit = Audit(AuditReport::new());
    let error = sim.run_until(0.1, &mut audit).unwrap_err();
    let RunError::OutOfRange { time, vertex } = error else {
        panic!("{error}");
    };
    assert_eq!((time, vertex), (2e-4, 4), "{error}");
    assert_eq!(audit.0.frames, 1, "only the start");
    let state = sim.model().state();
    let (x, v) = (state.x[4], state.v[4]);
    assert!(
        x.abs().max_element().max(2e-4 * v.abs().max_element()) > 1e100,
        "the particle is beyond the range, or moves beyond it in its next step: {x} {v}"
    );
}

/// Records the total momentum of the free vertices at every frame.
struct Momentum(Vec<DVec3>, f64);

impl FrameSink for Momentum {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        let c = acm::check::measure(frame.source, frame.time, frame.positions);
        self.0.push(c.momentum);
        let state = frame.model().state();
        let scale: f64 = (0..state.len())
            .map(|i| state.mass[i] * state.v[i].length())
            .sum();
        self.1 = self.1.max(scale);
        Ok(())
    }
}

/// Two free sheets collide head-on in zero gravity; the fail-safe (inelastic projection with
/// friction) handles every collision. Total momentum stays constant to round-off.
#[test]
fn inelastic_projection_conserves_momentum() {
    let sheet = |name: &str, y: f64, tilt: f64, vy: f64| SceneObject {
        name: name.into(),
        mesh: mesh::sheet(8, 8, 10.0, 10.0).unwrap().transformed(
            DVec3::ONE,
            DQuat::from_rotation_z(tilt),
            DVec3::new(0.3, y, 0.0),
        ),
        material: Material {
            density: 0.01,
            ..Material::default()
        },
        fixed: false,
        velocity: DVec3::new(5.0, vy, 0.0),
        particle_mass: None,
    };
    let mut scene = Scene {
        name: "head_on".into(),
        duration: 0.1,
        frame_interval: 0.002,
        gravity: DVec3::ZERO,
        objects: vec![
            sheet("low", 0.0, 0.05, 150.0),
            sheet("high", 1.0, -0.05, -150.0),
        ],
        ..Scene::default()
    };
    scene.integrator.method = Method::Sync;
    scene.sync.failsafe = FailSafe::InelasticProjection;
    scene.sync.thickness = Some(0.005);
    scene.sync.friction = Some(0.3);
    scene.sync.max_ccd_iterations = 0;
    let mut sim = SyncSimulation::new(&scene).unwrap();
    let mut momentum = Momentum(Vec::new(), 0.0);
    sim.run_until(0.1, &mut momentum).unwrap();
    let f = sim.stats().filter;
    assert!(
        f.failsafe_steps > 5 && f.projection_iterations > 0,
        "the projection did the work: {f:?}"
    );
    assert_eq!(f.unresolved_steps, 0);
    let p0 = momentum.0[0];
    let worst = momentum
        .0
        .iter()
        .map(|p| (*p - p0).length())
        .fold(0.0, f64::max);
    // Measured: 3e-12 of the largest sum m |v| (round-off of m * (1/m) and of the weights,
    // summed over 150 steps of large impulses).
    assert!(
        worst <= 1e-10 * momentum.1,
        "momentum drifted by {worst:e} (scale {:e})",
        momentum.1
    );
}
