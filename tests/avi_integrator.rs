//! The asynchronous variational integrator: agreement with symplectic Euler, conservation of
//! momentum, bounded energy, and dissipation by damping.

mod common;

use acm::check::{measure, Conservation};
use acm::forces::{bending, spring};
use acm::prelude::{FrameSource, Stepper};
use acm::scene::{Material, SceneObject, SpeedSettings};
use acm::{NoFrames, Scene, Simulation};
use common::{sheet_scene, Rng};
use glam::DVec3;

fn material(stretch_damping: f64, bend_damping: f64) -> Material {
    Material {
        density: 0.01,
        stretch: 1000.0,
        stretch_damping,
        bend: 10.0,
        bend_damping,
        drag: 0.0,
    }
}

/// Gives every free vertex of `scene`'s first object a random velocity.
fn randomize_velocities(sim: &mut Simulation, seed: u64, speed: f64) {
    let mut rng = Rng(seed);
    let n = sim.model().state().len();
    for i in 0..n {
        sim.set_velocity(i, rng.vec(speed)).unwrap();
    }
}

fn conservation_now(sim: &Simulation) -> Conservation {
    let mut positions = Vec::new();
    sim.model().positions_at(sim.time(), &mut positions);
    measure(sim, sim.time(), &positions)
}

#[test]
fn equal_clocks_reproduce_symplectic_euler() {
    let h = 2e-4;
    let steps = 400;
    let mut scene = sheet_scene(6, 10.0, material(0.0, 0.0));
    scene.gravity = DVec3::new(0.0, -981.0, 0.0);
    scene.integrator.clock = Some(h);
    // Start bent out of plane so bending forces act from the first step.
    for (i, p) in scene.objects[0].mesh.positions.iter_mut().enumerate() {
        p.y = 0.3 * (p.x * 0.4).sin() + 0.01 * i as f64;
    }
    let mut sim = Simulation::new(&scene).unwrap();
    let mut rng = Rng(7);
    for i in 0..sim.model().state().len() {
        sim.set_velocity(i, rng.vec(5.0)).unwrap();
    }

    // The reference: plain symplectic Euler with the same potentials.
    let state = sim.model().state();
    let (mut x, mut v) = (state.x.clone(), state.v.clone());
    let inv_mass = state.inv_mass.clone();
    let springs = &sim.model().springs().kernel;
    let hinges = &sim.model().hinges().kernel;
    for _ in 0..steps {
        let mut force = vec![DVec3::ZERO; x.len()];
        for e in 0..springs.ends.len() {
            let [a, b] = springs.ends[e];
            let g = spring::gradient(
                x[a as usize],
                x[b as usize],
                springs.rest[e],
                springs.materials.stiffness(e),
            );
            force[a as usize] -= g[0];
            force[b as usize] -= g[1];
        }
        for e in 0..hinges.verts.len() {
            let vs = hinges.verts[e];
            let g = bending::gradient(
                vs.map(|i| x[i as usize]),
                &hinges.rest[e],
                hinges.materials.stiffness(e),
            );
            for k in 0..4 {
                force[vs[k] as usize] -= g[k];
            }
        }
        for i in 0..x.len() {
            v[i] += h * inv_mass[i] * force[i] + h * scene.gravity;
            x[i] += h * v[i];
        }
    }

    // AVI: ticks 0 .. steps-1, then drift to steps * h.
    sim.run_until((steps as f64 - 0.5) * h, &mut NoFrames)
        .unwrap();
    let mut avi = Vec::new();
    sim.model().positions_at(steps as f64 * h, &mut avi);
    let worst = avi
        .iter()
        .zip(&x)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f64::max);
    // The two differ only in the order of floating-point additions.
    eprintln!("AVI vs symplectic Euler after {steps} steps: {worst:e} cm");
    assert!(
        worst < 1e-10,
        "AVI and symplectic Euler differ by {worst} cm"
    );
    // And the motion was not trivial.
    let moved = avi
        .iter()
        .zip(&sim.model().state().x)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f64::max);
    assert!(sim.stats().events.stretching == steps as u64 && moved > 0.0);
}

/// A free sheet with random velocities, classic per-element AVI (every element on its own clock).
fn free_sheet() -> Simulation {
    let mut scene = sheet_scene(8, 20.0, material(0.0, 0.0));
    // Each element at its own stable clock (not rounded to power-of-two bins), so that the
    // clocks differ from element to element.
    scene.speed = SpeedSettings {
        super_elements: false,
        clock_bins: false,
        ..SpeedSettings::ALL
    };
    let mut sim = Simulation::new(&scene).unwrap();
    randomize_velocities(&mut sim, 42, 20.0);
    sim
}

#[test]
fn asynchronous_run_conserves_linear_and_angular_momentum() {
    let mut sim = free_sheet();
    let start = conservation_now(&sim);
    let state = sim.model().state();
    let p_scale: f64 = (0..state.len())
        .map(|i| state.mass[i] * state.v[i].length())
        .sum();
    let l_scale: f64 = (0..state.len())
        .map(|i| state.mass[i] * state.x[i].length() * state.v[i].length())
        .sum();
    let mut t = 0.0;
    while sim.stats().events.total() < 10_000 {
        t += 1e-3;
        sim.run_until(t, &mut NoFrames).unwrap();
    }
    let end = conservation_now(&sim);
    let dp = (end.momentum - start.momentum).length() / p_scale;
    let dl = (end.angular_momentum - start.angular_momentum).length() / l_scale;
    eprintln!(
        "{} events: momentum drift {dp:e}, angular momentum drift {dl:e} (relative)",
        sim.stats().events.total()
    );
    assert!(dp < 1e-12, "linear momentum drifted by {dp:e} (relative)");
    assert!(dl < 1e-12, "angular momentum drifted by {dl:e} (relative)");
    // Elements really ran asynchronously: several distinct clocks.
    let clocks = sim.stats().run.clocks.stretching.unwrap();
    let (lo, hi) = (clocks.min, clocks.max);
    assert!(
        hi > 1.01 * lo,
        "expected distinct element clocks, got {lo}..{hi}"
    );
}

#[test]
fn asynchronous_run_energy_has_no_drift() {
    let mut sim = free_sheet();
    let mut totals = Vec::new();
    let frames = 400;
    for k in 0..frames {
        sim.run_until(k as f64 * 2.5e-3, &mut NoFrames).unwrap();
        totals.push(conservation_now(&sim).total);
    }
    let tenth = frames / 10;
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let first = mean(&totals[..tenth]);
    let last = mean(&totals[frames - tenth..]);
    eprintln!("energy: first 10% mean {first}, last 10% mean {last}");
    assert!(
        (last - first).abs() < 0.01 * first.abs(),
        "energy drifted: first 10% mean {first}, last 10% mean {last}"
    );
    // And it stays in a band. The measured total mixes positions at t with the velocities of
    // the current half step (as any leapfrog), which at safety 0.5 (h * omega <= 1) puts it up
    // to ~8% off the conserved shadow energy; an instability would grow without bound.
    let band = totals.iter().map(|e| (e - first).abs()).fold(0.0, f64::max);
    assert!(
        band < 0.15 * first,
        "energy left its band: {band} vs {first}"
    );
}

#[test]
fn damped_pinned_sheet_settles() {
    let profile = common::profiles_dir().join("pinned_sheet.toml");
    let mut scene: Scene = acm::scene::profile::load(&profile, &[]).unwrap();
    scene.objects[0].material.drag = 2.0;
    scene.objects[0].material.bend_damping = 0.01;
    let mut sim = Simulation::new(&scene).unwrap();
    let mut peak: f64 = 0.0;
    let mut last = 0.0;
    for k in 1..=400 {
        sim.run_until(k as f64 * 0.02, &mut NoFrames).unwrap();
        last = conservation_now(&sim).kinetic;
        peak = peak.max(last);
    }
    eprintln!("kinetic energy: peak {peak}, end {last}");
    assert!(peak > 0.0);
    assert!(
        last < 0.01 * peak,
        "kinetic energy {last} is not below 1% of its peak {peak}"
    );
}

#[test]
fn per_element_clocks_keep_an_irregular_undamped_shell_s_energy_flat() {
    // A lumpy closed shell (element clocks spread over several powers of two), undamped,
    // pinned at one vertex and thrown sideways, ticked one element an event at the default
    // safety. Each element's clock is rounded down to its power-of-two bin (as the
    // super-elements tick): with each element at its own clock this run gains 0.78% in 5 s
    // through the integrator's resonances between nearby clocks.
    let blob = acm::mesh::lumpy_sphere(5.0, 6, 0.3, 3).unwrap();
    let mut scene = Scene::builder("blob")
        .duration(5.0)
        .frame_interval(0.05)
        .gravity(DVec3::ZERO)
        .object(
            SceneObject::new("blob", blob)
                .material(material(0.0, 0.0))
                .moving(DVec3::new(20.0, 0.0, 0.0)),
        )
        .pin(0, [0])
        .build()
        .unwrap();
    scene.speed.super_elements = false;
    assert!(scene.speed.clock_bins, "the default");
    let mut sim = Simulation::new(&scene).unwrap();
    let clocks = sim.stats().run.clocks;
    let (springs, hinges) = (clocks.stretching.unwrap(), clocks.bending.unwrap());
    assert!(
        springs.max > 2.0 * springs.min && hinges.max > 4.0 * hinges.min,
        "clocks spread over several bins: {springs:?}, {hinges:?}"
    );
    let totals: Vec<f64> = (0..=100)
        .map(|k| {
            sim.run_until(k as f64 * 0.05, &mut NoFrames).unwrap();
            conservation_now(&sim).total
        })
        .collect();
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let (first, last) = (mean(&totals[..=20]), mean(&totals[80..]));
    eprintln!("energy: first second's mean {first}, last second's {last}");
    // Measured: +0.03% (each element at its own clock: +0.78%).
    assert!(
        (last - first).abs() < 0.005 * first,
        "energy: first second's mean {first}, last second's {last}"
    );
}
