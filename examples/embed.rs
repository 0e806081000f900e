//! Embedding acm in a pipeline: build a scene in code, step to a time, read positions without
//! copying the state, steer a scripted vertex, and continue.
//!
//! `cargo run --release --example embed`

use acm::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A 40 cm sheet hanging from one corner that we drag around by hand.
    let sheet = acm::mesh::sheet(16, 16, 40.0, 40.0)?;
    let cloth = Material {
        drag: 0.5,
        ..Material::default()
    };
    let scene = Scene::builder("embedded")
        .duration(2.0)
        .object(
            SceneObject::new("sheet", sheet)
                .translated(DVec3::new(0.0, 50.0, 0.0))
                .material(cloth),
        )
        .pin(0, [0])
        .build()?;
    let mut sim = Simulation::new(&scene)?;

    // Step to 0.5 s and read the state in place: x at each vertex's own clock, plus velocity.
    sim.run_until(0.5, &mut NoFrames)?;
    let state = sim.model().state();
    let t = sim.time();
    let lowest = (0..state.len())
        .map(|i| state.position_at(i, t).y)
        .fold(f64::INFINITY, f64::min);
    println!("t = {t:.2} s: lowest point at y = {lowest:.2} cm");

    // Drag the pinned corner sideways at 20 cm/s from now on, then continue.
    sim.set_velocity(0, DVec3::new(20.0, 0.0, 0.0))?;
    sim.run_until(1.0, &mut NoFrames)?;
    let corner = sim.model().state().position_at(0, sim.time());
    println!("t = {:.2} s: dragged corner at {corner:.2}", sim.time());

    // Or take a snapshot of every position at once.
    let mut positions = Vec::new();
    sim.model().positions_at(sim.time(), &mut positions);
    let centre = positions.iter().copied().sum::<DVec3>() / positions.len() as f64;
    println!("centre of the sheet: {centre:.2}");
    println!("{} events so far", sim.stats().events.total());
    Ok(())
}
