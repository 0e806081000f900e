//! The default drape (`profiles/sheet_on_sphere.toml`, compiled into the library): a sheet of
//! light cloth falls onto a fixed sphere. Prints a progress line per frame and a summary.
//!
//! `cargo run --release --example drape [SECONDS]` (default: the profile's 1 s)

use std::io::Write;
use std::path::Path;

use acm::check::measure;
use acm::prelude::Stepper;
use acm::scene::profile;
use acm::Simulation;
use acm::{Frame, FrameSink, RunError};

/// Overwrites one progress line on stderr per frame, and keeps the first and last energies.
struct Progress {
    frames: u64,
    energy: Option<(f64, f64)>,
}

impl FrameSink for Progress {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        let total = measure(frame.source, frame.time, frame.positions).total;
        let first = self.energy.map_or(total, |(first, _)| first);
        self.energy = Some((first, total));
        let now = frame.source.penalty_now();
        eprint!(
            "\rframe {:>3}/{}  t = {:.3} s  {:>9} events  {:>5} pairs in layers (deepest {})",
            frame.index + 1,
            self.frames,
            frame.time,
            frame.source.work_done(),
            now.active_pairs,
            now.deepest_layer,
        );
        std::io::stderr().flush()?;
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scene = profile::parse(
        acm::DEFAULT_PROFILE,
        "sheet_on_sphere.toml",
        Path::new("."),
        &[],
    )?;
    let until = match std::env::args().nth(1) {
        Some(s) => s
            .parse::<f64>()
            .map_err(|e| format!("SECONDS {s:?}: {e}"))?,
        None => scene.duration,
    };
    let mut sim = Simulation::new(&scene)?;
    let mut progress = Progress {
        frames: (until / scene.frame_interval).floor() as u64 + 1,
        energy: None,
    };
    sim.run_until(until, &mut progress)?;
    eprintln!();

    let s = sim.stats();
    println!(
        "{}: {} vertices, {:.2} s simulated in {:.2} s wall ({} events, {:.0} events/s)",
        s.run.scene,
        s.run.model.vertices,
        s.run.simulated_seconds,
        s.run.wall_seconds,
        s.events_total,
        s.events_per_second
    );
    if let Some(c) = &s.contact {
        println!(
            "contact: deepest layer {}, closest approach {:.4} cm (eta1 = {} cm)",
            c.deepest_layer, c.min_distance, scene.contact.eta1
        );
    }
    if let Some((first, last)) = progress.energy {
        println!("total energy: {first:.4e} erg at t = 0, {last:.4e} erg at the end");
    }
    Ok(())
}
