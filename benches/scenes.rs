//! The paper's scenes (issue 5): a fixed short window from t = 0 of each scene profile, on one
//! thread, building the simulation outside the timing. Windows are short so that the smoke run
//! (`cargo test --release --benches`) stays quick; full-length and longer-window timings against
//! the thesis are in `benches/README.md`.

use std::path::PathBuf;

use acm::prelude::Stepper;
use acm::scene::profile;
use acm::{NoFrames, Simulation};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

/// Profile name and simulated window (s).
const WINDOWS: [(&str, f64); 15] = [
    ("particle_floor", 0.1),
    ("spring_wall", 0.05),
    ("ball_plate", 0.002),
    ("ball_wedges", 0.01),
    ("particle_box", 0.002),
    ("sludge_slope", 0.01),
    ("curtains_ball", 0.002),
    ("sheets_nails_drape", 0.002),
    ("sheets_nails_pull", 0.002),
    ("projectiles_nails", 0.005),
    ("bunny_compactor", 0.005),
    ("trash_compactor", 0.01),
    ("reef_knot", 0.01),
    ("reef_knot_untie", 0.01),
    ("bowline_knot", 0.02),
];

fn scenes(c: &mut Criterion) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("profiles");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    let mut group = c.benchmark_group("scenes");
    group.sample_size(10);
    for (name, window) in WINDOWS {
        let scene = profile::load(&dir.join(format!("{name}.toml")), &[])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        group.bench_function(format!("{name}_{window}s"), |b| {
            b.iter_batched(
                || Simulation::new(&scene).expect("the profile builds"),
                |mut sim| {
                    pool.install(|| sim.run_until(window, &mut NoFrames))
                        .expect("the window runs");
                    sim
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, scenes);
criterion_main!(benches);
