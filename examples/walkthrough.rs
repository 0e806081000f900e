//! The walkthrough of thesis §5.1 (CACM Fig. 6), event by event: a particle falls onto a fixed
//! floor; a separation slab certifies it is far away and fails as it approaches; layer 1 switches
//! on before the particle is within eta1; gravity and layer ticks then alternate until the
//! particle rests where the layer-1 force balances gravity, d = eta1 - m g / r1.
//!
//! `cargo run --release --example walkthrough`

use acm::events::EventKind;
use acm::prelude::FrameSource;
use acm::scene::profile;
use acm::{NoFrames, Simulation};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/particle_floor.toml");
    let scene = profile::load(&path, &[])?;
    let mut sim = Simulation::new(&scene)?;
    let particle = sim.model().state().len() - 1;
    let height = |sim: &Simulation| sim.model().state().position_at(particle, sim.time()).y;
    let (eta1, r1) = (scene.contact.eta1, scene.contact.r1);
    let rest = eta1 - sim.model().state().mass[particle] * 981.0 / r1;

    println!(
        "{:>10}  {:<34} {:>10} {:>10}",
        "t (s)", "event", "height", "v_y"
    );
    let (mut shown, mut gravity_ticks, mut deepest) = (0, 0u64, 0);
    while let Some(event) = sim.step(&mut NoFrames)? {
        if event.time > scene.duration {
            break;
        }
        let layers = sim.stats().contact.as_ref().map_or(0, |c| c.deepest_layer);
        let what = match event.kind {
            EventKind::Force => {
                gravity_ticks += 1;
                format!("gravity tick {gravity_ticks}")
            }
            EventKind::Certificate if layers > deepest => {
                format!("slab fails: layer {layers} switches on")
            }
            EventKind::Certificate => "slab fails: still far, new slab".into(),
            EventKind::Penalty => format!("layer {} tick", event.payload),
            EventKind::BroadPhase => "broad-phase window ends".into(),
            EventKind::Snapshot | EventKind::Script => continue,
        };
        deepest = layers;
        // Print the approach and the first contact in full, then every 200th event.
        let near = height(&sim) < 1.5 * eta1;
        if (near && shown < 40) || sim.work_done() % 200 == 0 {
            let v = sim.model().state().v[particle].y;
            println!(
                "{:>10.6}  {:<34} {:>10.6} {:>10.4}",
                event.time,
                what,
                height(&sim),
                v
            );
            shown += near as usize;
        }
    }
    println!(
        "\nrest height {:.5} cm (eta1 - m g / r1 = {rest:.5} cm), deepest layer {deepest}, {} events",
        height(&sim),
        sim.work_done()
    );
    Ok(())
}
