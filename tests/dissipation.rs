//! Restitution and friction (thesis §4.3): how contact removes energy, audited like every scene.

mod common;

use acm::mesh;
use acm::penalty::layers::{LayerLaw, LayerSchedule};
use acm::prelude::{FrameSource, Stepper};
use acm::scene::{Material, Scene, SceneObject};
use acm::{NoFrames, Simulation};
use glam::DVec3;

fn floor() -> SceneObject {
    SceneObject {
        name: "floor".into(),
        mesh: mesh::sheet(2, 2, 200.0, 200.0).unwrap(),
        material: Material::default(),
        fixed: true,
        velocity: DVec3::ZERO,
        particle_mass: None,
    }
}

fn stiff(density: f64) -> Material {
    Material {
        density,
        stretch: 20000.0,
        stretch_damping: 0.0,
        bend: 10.0,
        bend_damping: 0.0,
        drag: 0.0,
    }
}

fn scene(object: SceneObject, cor: f64, friction: f64) -> Scene {
    let mut scene = Scene {
        name: "dissipation".into(),
        objects: vec![floor(), object],
        ..Scene::default()
    };
    scene.contact.enabled = true;
    scene.contact.cor = cor;
    scene.contact.friction = friction;
    scene
}

/// Mass-weighted mean velocity of object 1.
fn centre_velocity(sim: &Simulation) -> DVec3 {
    let r = &sim.model().objects()[1];
    let s = sim.model().state();
    let range = r.first_vertex as usize..(r.first_vertex + r.vertex_count) as usize;
    let m: f64 = s.mass[range.clone()].iter().sum();
    range.map(|i| s.mass[i] * s.v[i]).sum::<DVec3>() / m
}

/// Drops a small stiff closed shell from 0.5 cm and returns rebound speed / impact speed.
fn rebound_ratio(cor: f64) -> f64 {
    let ball = SceneObject {
        name: "ball".into(),
        mesh: mesh::icosphere(1.0, 1).unwrap().transformed(
            DVec3::ONE,
            glam::DQuat::IDENTITY,
            DVec3::new(0.0, 1.5, 0.0),
        ),
        material: stiff(0.01),
        fixed: false,
        velocity: DVec3::ZERO,
        particle_mass: None,
    };
    // Fine layer clocks: at the default `contact.safety` the layer clocks' energy error per
    // impact (README, known limitations) is as large as the restitution effect being measured.
    let mut s = scene(ball, cor, 0.0);
    s.contact.safety = 0.05;
    let mut sim = Simulation::new(&s).unwrap();
    sim.set_audit(true);
    let (mut impact, mut rebound) = (0.0f64, 0.0f64);
    for k in 1..=800 {
        sim.run_until(k as f64 * 1e-4, &mut NoFrames).unwrap();
        let vy = centre_velocity(&sim).y;
        impact = impact.min(vy);
        rebound = rebound.max(vy);
    }
    assert!(impact < -20.0, "the ball fell: {impact}");
    rebound / -impact
}

#[test]
fn rebound_grows_with_the_coefficient_of_restitution() {
    let ratios: Vec<f64> = [0.0, 0.5, 1.0].into_iter().map(rebound_ratio).collect();
    eprintln!("rebound ratios for COR 0, 0.5, 1: {ratios:?}");
    assert!(
        ratios[0] < ratios[1] && ratios[1] < ratios[2],
        "rebound ratios {ratios:?} for COR 0, 0.5, 1"
    );
}

#[test]
fn inelastic_particle_leaves_with_at_most_the_thesis_bound() {
    let mut particle = SceneObject::particle("p", DVec3::new(0.3, 1.0, 0.2), 0.01);
    particle.velocity = DVec3::new(0.0, -100.0, 0.0);
    let mut s = scene(particle, 0.0, 0.0);
    s.gravity = DVec3::ZERO;
    let mut sim = Simulation::new(&s).unwrap();
    sim.set_audit(true);
    sim.run_until(0.05, &mut NoFrames).unwrap();
    let v_up = sim.model().state().v[4].y;
    let deepest = sim.stats().contact.as_ref().unwrap().deepest_layer;
    assert!(deepest >= 1);
    // §6.4: with COR 0 a layer can leave at most r(l) eta(l) h(l) of velocity per unit mass.
    let schedule = LayerSchedule::new(s.contact.eta1, s.contact.r1, LayerLaw::Thesis).unwrap();
    let bound: f64 = (1..=deepest)
        .map(|l| {
            schedule.r(l) * schedule.eta(l) * schedule.clock(l, 0.01, s.integrator.safety) / 0.01
        })
        .sum();
    eprintln!("COR 0 residual velocity {v_up} cm/s, bound {bound} cm/s, deepest layer {deepest}");
    assert!(v_up >= 0.0, "the particle does not sink: {v_up}");
    assert!(
        v_up <= bound,
        "residual velocity {v_up} above the bound {bound}"
    );
    assert!(
        v_up < 100.0 * 0.5,
        "most of the impact speed is gone: {v_up}"
    );
}

/// A small stiff square slid along the floor at 30 cm/s: returns (distance slid in 0.25 s,
/// relative change of its tangential momentum).
fn slide(mu: f64) -> (f64, f64) {
    let square = SceneObject {
        name: "square".into(),
        mesh: mesh::sheet(4, 4, 3.0, 3.0).unwrap().transformed(
            DVec3::ONE,
            glam::DQuat::IDENTITY,
            DVec3::new(-40.0, 0.12, 7.0),
        ),
        material: stiff(0.01),
        fixed: false,
        velocity: DVec3::new(30.0, 0.0, 0.0),
        particle_mass: None,
    };
    let mut s = scene(square, 0.0, mu);
    s.contact.eta1 = 0.1;
    let mut sim = Simulation::new(&s).unwrap();
    sim.set_audit(true);
    let start = centre_velocity(&sim).x;
    let x0 = sim.model().state().x[4].x;
    sim.run_until(0.25, &mut NoFrames).unwrap();
    let x1 = sim.model().state().position_at(4, 0.25).x;
    ((x1 - x0), (centre_velocity(&sim).x - start).abs() / start)
}

#[test]
fn friction_stops_a_sliding_square_sooner_when_larger() {
    let (free, change) = slide(0.0);
    assert!(
        change < 1e-3,
        "without friction the tangential momentum changed by {change:e}"
    );
    let (some, _) = slide(0.2);
    let (more, _) = slide(0.6);
    eprintln!(
        "slid {free} / {some} / {more} cm for mu 0 / 0.2 / 0.6; mu = 0 momentum change {change:e}"
    );
    assert!(
        free > some && some > more,
        "slid {free}, {some}, {more} cm for mu 0, 0.2, 0.6"
    );
    assert!(more < 0.5 * free);
}
