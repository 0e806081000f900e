//! `acm plot`: charts of a run's output directory, and its errors.

mod common;

use std::path::Path;

use acm::prelude::{FrameSource, Stepper};
use common::{acm, profiles_dir};
use plotters::style::{Color, Palette, Palette99};

/// Decodes the PNG at `path`: (width, height, RGB(A) bytes, bytes per pixel).
fn decode(path: &Path) -> (u32, u32, Vec<u8>, usize) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = png::Decoder::new(file).read_info().expect("a PNG header");
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).expect("PNG image data");
    pixels.truncate(info.buffer_size());
    (info.width, info.height, pixels, info.color_type.samples())
}

/// The rows of a CSV file after its header, as numbers.
fn rows(path: &Path) -> Vec<Vec<f64>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|f| f.parse().unwrap()).collect())
        .collect()
}

#[test]
fn plot_draws_the_charts_of_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join("particle_floor.toml");
    let out = acm(
        dir.path(),
        &["run", profile.to_str().unwrap(), "--out", "run"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = dir.path().join("run");

    // The particle comes to rest on the floor's layer 1 (thesis §5.1).
    let contact = rows(&run.join("contact.csv"));
    assert_eq!(contact.len(), 101, "a row per frame");
    assert_eq!(contact[0][1..], [0.0, 0.0], "no contact while falling");
    let last = contact.last().unwrap();
    assert!(last[1] >= 1.0, "a pair is in a layer at rest: {last:?}");
    assert_eq!(last[2], 1.0, "the particle rests on layer 1: {last:?}");
    // One free vertex, so each frame's histogram holds exactly one count.
    for row in rows(&run.join("steps.csv")) {
        assert_eq!(row[1..].iter().sum::<f64>(), 1.0, "{row:?}");
    }

    let out = acm(dir.path(), &["plot", "run"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in ["energy.png", "contact.png", "steps.png"] {
        let (width, height, pixels, channels) = decode(&run.join(name));
        // The size docs/output.md gives.
        assert_eq!((width, height), (1200, 900), "{name}");
        let inked = pixels
            .chunks(channels)
            .filter(|p| p[..3] != [255, 255, 255])
            .count();
        let share = inked as f64 / (width * height) as f64;
        assert!(share > 0.01, "{name} is blank: {share} of its pixels inked");
        // The first series (bars) has the palette's first colour: the data were drawn.
        let first = Palette99::pick(0).rgb();
        let data = pixels
            .chunks(channels)
            .filter(|p| p[..3] == [first.0, first.1, first.2])
            .count();
        assert!(data > 100, "{name}: {data} pixels of data");
    }
}

#[test]
fn plot_skips_what_a_synchronous_run_does_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join("particle_floor.toml");
    let run = |integrator: &str| {
        let out = acm(
            dir.path(),
            &[
                "run",
                profile.to_str().unwrap(),
                "--out",
                "run",
                "--until",
                "0.1",
                "--set",
                integrator,
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run("integrator=acm");
    run("integrator=sync");
    let run_dir = dir.path().join("run");
    assert!(
        !run_dir.join("contact.csv").exists(),
        "the ACM run's file is gone"
    );
    let out = acm(dir.path(), &["plot", "run"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("skipped contact.png"), "{stdout}");
    assert!(run_dir.join("energy.png").exists());
    assert!(!run_dir.join("steps.png").exists());
}

#[test]
fn plot_names_the_missing_or_malformed_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = acm(dir.path(), &["plot", "no_such_run"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no_such_run"), "{stderr}");

    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let out = acm(dir.path(), &["plot", "run"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "run: holds no energy.csv: run a scene into it first (acm run PROFILE --out run)"
        ),
        "{stderr}"
    );

    // The columns docs/output.md gives.
    let header = "time,kinetic,elastic,gravity,penalty,total,px,py,pz,lx,ly,lz";
    let good = "0,1,0,0,0,1,0,0,0,0,0,0";
    for (text, says) in [
        (
            format!("{header}\n{good}\n0.1,1,x,0,0,1,0,0,0,0,0,0\n"),
            "energy.csv:3: elastic is not a number",
        ),
        (
            format!("{header}\n{good}\n0.1,1\n"),
            "energy.csv:3: 2 fields",
        ),
        (format!("{header}\n"), "energy.csv:1: no rows"),
        (
            "time,kinetic\n0,1\n".to_string(),
            "energy.csv:1: no column \"elastic\"",
        ),
    ] {
        std::fs::write(run.join("energy.csv"), text).unwrap();
        let out = acm(dir.path(), &["plot", "run"]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "expected {says:?} in {stderr}");
    }

    // A bin's count of vertices must be a whole number: a share of 1e-306 percent once left
    // the histogram's log axis spanning 300 decades, and the drawing never ended.
    std::fs::write(
        run.join("energy.csv"),
        format!(
            "{header}
{good}
"
        ),
    )
    .unwrap();
    for (count, shown) in [
        ("0.5", "0.5"),
        ("1e-305", "1e-305"),
        ("-1", "-1.0"),
        ("nan", "NaN"),
        ("1e300", "1e300"),
    ] {
        let steps = format!("time,1e-4,1e-3\n0,0,10\n\n0.1,{count},10\n");
        std::fs::write(run.join("steps.csv"), steps).unwrap();
        let out = acm(dir.path(), &["plot", "run"]);
        assert_eq!(out.status.code(), Some(2), "{count}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let says = format!("steps.csv:4: 1e-4 is {shown}, not a count of vertices");
        assert!(stderr.contains(&says), "expected {says:?} in {stderr}");
    }
}

#[test]
fn vertex_steps_are_the_family_clock_until_deep_layers_undercut_it() {
    let scene = common::head_on();
    let mut sim = acm::Simulation::new(&scene).unwrap();
    let clocks = sim.stats().run.clocks;
    let family = [clocks.stretching, clocks.bending]
        .into_iter()
        .flatten()
        .map(|r| r.min)
        .fold(f64::INFINITY, f64::min);
    let mut steps = Vec::new();
    sim.vertex_steps(&mut steps);
    assert!(
        steps.iter().all(|&h| h == family),
        "before contact: {family}"
    );
    assert_eq!(sim.penalty_now(), acm::PenaltyNow::default());

    // Through the impact and the rebounds: the smallest step is the clock of the deepest active
    // layer (or the family clock if that is smaller), so it falls as the layer deepens.
    let mut samples = Vec::new();
    while sim.time() < 0.04 {
        let next = sim.time() + scene.frame_interval;
        sim.run_until(next, &mut acm::NoFrames).unwrap();
        sim.vertex_steps(&mut steps);
        let smallest = steps.iter().copied().fold(f64::INFINITY, f64::min);
        samples.push((sim.penalty_now().deepest_layer, smallest));
        penalty_pairs_match_penalty_now(&sim);
    }
    samples.sort_by_key(|s| s.0);
    let deepest = samples.last().unwrap().0;
    assert!(
        deepest >= 10,
        "the 1,100 cm/s impact reaches deep layers: {deepest}"
    );
    for w in samples.windows(2) {
        let ((l0, h0), (l1, h1)) = (w[0], w[1]);
        if l0 == l1 {
            assert_eq!(h0, h1, "one clock per layer: {w:?}");
        } else {
            assert!(h1 <= h0, "a deeper layer has a smaller step: {w:?}");
        }
    }
    assert!(samples.last().unwrap().1 < family / 10.0);
}

/// `Simulation::penalty_pairs` lists what `penalty_now` counts, and every pair of the two
/// sheets has a vertex on each sheet (they meet head on; neither touches itself).
fn penalty_pairs_match_penalty_now(sim: &acm::Simulation) {
    let now = sim.penalty_now();
    let b = sim.model().objects()[1].first_vertex;
    let mut deepest = 0;
    let mut count = 0;
    for (vertices, layer) in sim.penalty_pairs() {
        assert!(matches!(vertices.len(), 4 | 6), "{vertices:?}");
        assert!(vertices.iter().any(|&v| v < b) && vertices.iter().any(|&v| v >= b));
        assert!(vertices
            .iter()
            .all(|&v| (v as usize) < sim.model().state().len()));
        deepest = deepest.max(layer);
        count += 1;
    }
    assert_eq!((count, deepest), (now.active_pairs, now.deepest_layer));
}
