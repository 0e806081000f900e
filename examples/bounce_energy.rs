//! Energy per impact of a particle bouncing between two fixed walls (no gravity, `cor = 1`):
//! the table "Work closure and the two clock rules" of `benches/README.md`.
//!
//! `cargo run --release --example bounce_energy -- SPEED START [PASSES] [KEY=VALUE ...]`
//!
//! The particle (0.01 g) starts between two two-triangle walls 4 cm apart, away from their
//! diagonals, moving along their normal at `SPEED` cm/s; `START` (0, 1, 2, ...) perturbs its
//! position and speed. It runs until the particle has crossed the midplane `PASSES` times
//! (default 1,000) or the run stops. `KEY=VALUE` pairs set the contact settings:
//! `safety=0.2`, `clocks=stack` (or `thesis`), `work_closure=false`, `cor=0.9` (default 1),
//! `closure_restitution=true`. Prints the spread and the
//! mean of the energy ratio across one impact over the first 50 impacts, the mean energy of the
//! last tenth of the passes over the first tenth, and how the run ended.

use acm::mesh::{self, TriMesh};
use acm::penalty::layers::LayerClocks;
use acm::prelude::FrameSource;
use acm::scene::{Material, Scene, SceneObject};
use acm::{NoFrames, Simulation};
use glam::{DQuat, DVec3};

/// The walls' distance (cm).
const GAP: f64 = 4.0;

/// A fixed two-triangle wall, 10 cm square, at height `y`.
fn wall(name: &str, y: f64) -> Result<SceneObject, Box<dyn std::error::Error>> {
    let sheet: TriMesh = mesh::sheet(2, 2, 10.0, 10.0)?;
    Ok(SceneObject {
        name: name.into(),
        mesh: sheet.transformed(DVec3::ONE, DQuat::IDENTITY, DVec3::new(0.0, y, 0.0)),
        material: Material::default(),
        fixed: true,
        velocity: DVec3::ZERO,
        particle_mass: None,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: bounce_energy SPEED START [PASSES] [KEY=VALUE ...]";
    let speed: f64 = args.first().ok_or(usage)?.parse()?;
    let start: f64 = args.get(1).ok_or(usage)?.parse()?;
    let (passes, settings) = match args.get(2).map(|a| a.parse::<usize>()) {
        Some(Ok(passes)) => (passes, args.get(3..).unwrap_or(&[])),
        _ => (1000, args.get(2..).unwrap_or(&[])),
    };
    let position = DVec3::new(0.3 + 0.1 * start, 0.5 * GAP + 0.013 * start, -1.7);
    let mut particle = SceneObject::particle("particle", position, 0.01);
    particle.velocity = DVec3::new(0.0, -speed * (1.0 + 1e-3 * start), 0.0);
    let mut scene = Scene {
        name: "bounce".into(),
        duration: 1000.0,
        frame_interval: 1000.0,
        gravity: DVec3::ZERO,
        objects: vec![wall("floor", 0.0)?, wall("ceiling", GAP)?, particle],
        ..Scene::default()
    };
    let contact = &mut scene.contact;
    (contact.enabled, contact.eta1, contact.r1, contact.cor) = (true, 0.1, 1000.0, 1.0);
    for setting in settings {
        match setting.split_once('=').ok_or(usage)? {
            ("safety", s) => contact.safety = s.parse()?,
            ("clocks", "thesis") => contact.clocks = LayerClocks::Thesis,
            ("clocks", "stack") => contact.clocks = LayerClocks::Stack,
            ("work_closure", w) => contact.work_closure = w.parse()?,
            ("cor", c) => contact.cor = c.parse()?,
            ("closure_restitution", r) => contact.closure_restitution = r.parse()?,
            _ => return Err(format!("{setting}: {usage}").into()),
        }
    }
    let mut sim = Simulation::new(&scene)?;
    let p = sim.model().objects()[2].first_vertex as usize;
    let m = sim.model().state().mass[p];
    let kinetic = |sim: &Simulation| 0.5 * m * sim.model().state().v[p].length_squared();
    let e0 = kinetic(&sim);
    let mut energies = Vec::new();
    let mut side = None;
    let mut ended = String::from("completed");
    while energies.len() < passes {
        match sim.step(&mut NoFrames) {
            Ok(Some(_)) => {}
            Ok(None) => {
                ended = "reached the scene's end".into();
                break;
            }
            Err(e) => {
                ended = e.to_string();
                break;
            }
        }
        let above = sim.model().state().position_at(p, sim.time()).y > 0.5 * GAP;
        if side.is_some_and(|s| s != above) {
            energies.push(kinetic(&sim));
        }
        side = Some(above);
    }
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len().max(1) as f64;
    let ratios: Vec<f64> = std::iter::once(e0)
        .chain(energies.iter().copied())
        .collect::<Vec<_>>()
        .windows(2)
        .take(50)
        .map(|w| w[1] / w[0] - 1.0)
        .collect();
    let gain = mean(&ratios);
    let spread = mean(
        &ratios
            .iter()
            .map(|r| (r - gain).powi(2))
            .collect::<Vec<_>>(),
    )
    .sqrt();
    let tenth = (energies.len() / 10).max(1).min(energies.len());
    let end_start = mean(&energies[energies.len() - tenth..]) / mean(&energies[..tenth]);
    let deepest = sim.stats().contact.as_ref().map_or(0, |c| c.deepest_layer);
    println!(
        "{speed} cm/s, start {start}: {} passes, deepest layer {deepest}, spread {:.3}%, mean \
         gain {:+.3}% per impact, end/start {end_start:.4}; {ended}",
        energies.len(),
        100.0 * spread,
        100.0 * gain
    );
    Ok(())
}
