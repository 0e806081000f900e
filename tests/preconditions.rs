//! The guarantee's preconditions, checked at load: a start that already intersects, a scene too
//! large for the machine, and numbers that could never make progress are refused with exit 2
//! (the library: a `SceneError`) before any frame exists.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::acm;

/// A fixed 10 x 10 cm plate at y = 0 and a free object `chip` read from `chip.obj`.
const PLATE_AND_CHIP: &str = r#"
[scene]
name = "pierced"
duration = 0.1
frame_interval = 0.05

[[object]]
name = "plate"
mesh = { generator = "sheet", nx = 2, ny = 2, width = 10.0, depth = 10.0 }
fixed = true

[[object]]
name = "chip"
mesh = { generator = "obj", path = "chip.obj" }

[object.material]
density = 0.001
stretch = 1000.0
bend = 0.1

[contact]
eta1 = 0.01
"#;

/// A small triangle whose edge from (0, -1, 0) to (0, 1, 0.5) passes through the plate.
const PIERCING_CHIP: &str = "v 0 -1 0\nv 0 1 0.5\nv 0.5 1 0\nf 1 2 3\n";

/// Two triangles of one mesh, sharing no vertex, crossing each other above the plate.
const SELF_CROSSING_CHIP: &str = "v -1 2 0\nv 1 2 0\nv 0 2 1\n\
                                  v 0 1 0.3\nv 0 3 0.3\nv 0 2 -1\n\
                                  f 1 2 3\nf 4 5 6\n";

/// Runs `acm ARGS` in a temp dir holding `p.toml` and `chip.obj`; returns (exit code, stderr).
fn run_in(profile: &str, chip: &str, args: &[&str]) -> (Option<i32>, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), profile).unwrap();
    std::fs::write(dir.path().join("chip.obj"), chip).unwrap();
    let out = acm(dir.path(), args);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (out.status.code(), stderr, dir)
}

#[test]
fn a_pierced_plate_is_refused_naming_objects_triangles_and_file() {
    for command in [
        &["run", "p.toml", "--out", "o", "--audit"][..],
        &["info", "p.toml"],
        &["run", "p.toml", "--out", "o", "--set", "integrator=sync"],
    ] {
        let (code, stderr, dir) = run_in(PLATE_AND_CHIP, PIERCING_CHIP, command);
        assert_eq!(code, Some(2), "{command:?}: {stderr}");
        for needle in [
            "p.toml",
            "\"plate\"",
            "\"chip\"",
            "triangle 0 of \"chip\"",
            "intersect",
        ] {
            assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
        }
        assert!(!dir.path().join("o/frame_00000.obj").exists());
    }
    // Lifted 2 cm, the same chip starts clear and runs.
    let lifted = PLATE_AND_CHIP.replace(
        "path = \"chip.obj\" }",
        "path = \"chip.obj\" }\ntranslate = [0.0, 2.0, 0.0]",
    );
    let (code, stderr, _dir) = run_in(&lifted, PIERCING_CHIP, &["run", "p.toml", "--frames", "2"]);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_mesh_that_crosses_itself_is_refused() {
    let (code, stderr, _dir) = run_in(PLATE_AND_CHIP, SELF_CROSSING_CHIP, &["info", "p.toml"]);
    assert_eq!(code, Some(2), "{stderr}");
    for needle in ["object \"chip\" crosses itself", "triangle 0", "triangle 1"] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
}

#[test]
fn without_contact_an_intersecting_start_is_allowed() {
    // Surfaces that do not collide may pass through each other: nothing to guarantee.
    let no_contact = PLATE_AND_CHIP.replace("[contact]\neta1 = 0.01\n", "");
    let (code, stderr, _dir) = run_in(&no_contact, PIERCING_CHIP, &["info", "p.toml"]);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn the_library_refuses_an_intersecting_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("chip.obj"), PIERCING_CHIP).unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(&path, PLATE_AND_CHIP).unwrap();
    // The profile loads (its values are fine); building any integrator refuses it.
    let scene = acm::scene::profile::load(&path, &[]).unwrap();
    let e = acm::Simulation::new(&scene).unwrap_err();
    assert!(e.message.contains("intersect"), "{e}");
    let e = acm::sync::SyncSimulation::new(&scene).unwrap_err();
    assert!(e.message.contains("intersect"), "{e}");
    let e = acm::implicit::ImplicitSimulation::new(&scene).unwrap_err();
    assert!(e.message.contains("intersect"), "{e}");
}

#[test]
fn a_scene_too_large_for_the_machine_is_refused_with_a_memory_estimate() {
    let huge = PLATE_AND_CHIP.replace("nx = 2, ny = 2", "nx = 100000000, ny = 4");
    let started = Instant::now();
    let (code, stderr, _dir) = run_in(&huge, PIERCING_CHIP, &["info", "p.toml"]);
    assert_eq!(code, Some(2), "{stderr}");
    for needle in ["400000000 vertices", "GB of memory", "use at most"] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_vertex_at_1e300_is_out_of_range_not_degenerate() {
    let (code, stderr, _dir) = run_in(
        PLATE_AND_CHIP,
        "v 0 1 0\nv 1e300 1 0\nv 0 1 1\nf 1 2 3\n",
        &["info", "p.toml"],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("vertex 1"), "{stderr}");
    assert!(stderr.contains("1e9 cm"), "{stderr}");
    assert!(!stderr.contains("degenerate"), "{stderr}");
}

/// `acm info` on `profile` (with `chip.obj` lifted clear of the plate) exits 2 within seconds
/// and names every needle.
fn refused_quickly(profile: &str, sets: &[&str], needles: &[&str]) {
    let lifted = profile.replace(
        "path = \"chip.obj\" }",
        "path = \"chip.obj\" }\ntranslate = [0.0, 2.0, 0.0]",
    );
    let mut args = vec!["run", "p.toml", "--out", "o"];
    for s in sets {
        args.extend(["--set", s]);
    }
    let started = Instant::now();
    let (code, stderr, dir) = run_in(&lifted, PIERCING_CHIP, &args);
    assert_eq!(code, Some(2), "{sets:?}: {stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    assert!(started.elapsed() < Duration::from_secs(20), "{sets:?}");
    assert!(!Path::new(&dir.path().join("o/frame_00001.obj")).exists());
}

#[test]
fn a_frame_interval_that_would_fill_the_disk_is_refused() {
    refused_quickly(
        PLATE_AND_CHIP,
        &["scene.frame_interval=1e-300"],
        &["scene.frame_interval", "frames"],
    );
}

#[test]
fn values_that_would_hang_are_refused_naming_the_limit_and_a_value_that_works() {
    for (set, needles) in [
        (
            "object.chip.material.density=1e-300",
            &["object[1].material", "stable clock", "ticks"][..],
        ),
        (
            "object.chip.material.stretch=1e300",
            &["object[1].material", "density >="],
        ),
        (
            "integrator.clock=1",
            &["integrator.clock", "stable clock", "Use at most"],
        ),
        ("contact.r1=1e300", &["contact.r1", "use r1 <="]),
        ("contact.eta1=1e-300", &["contact.eta1", "use at least"]),
        (
            "object.chip.velocity=[0, -1e16, 0]",
            &["object[1].velocity", "speeds up to"],
        ),
        (
            "object.chip.velocity=[0, -1e300, 0]",
            &["object[1].velocity", "speeds up to"],
        ),
    ] {
        refused_quickly(PLATE_AND_CHIP, &[set], needles);
    }
}

#[test]
fn a_particle_too_fast_to_resolve_is_refused_with_every_broad_phase() {
    let floor = common::profiles_dir().join("particle_floor.toml");
    let floor = floor.to_str().unwrap();
    for broad_phase in ["kdop18", "kdop26", "aabb", "spheres", "grid", "swept_boxes"] {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let out = acm(
            dir.path(),
            &[
                "run",
                floor,
                "--set",
                "object.particle.velocity=[0, -1e11, 0]",
                "--set",
                &format!("contact.broad_phase={broad_phase}"),
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{broad_phase}: {stderr}");
        assert!(
            stderr.contains("faster than contact can resolve"),
            "{stderr}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        // The particle at the fastest accepted speed runs clean and bounces: never below the
        // floor.
        let limit: f64 = stderr
            .split("speeds up to ")
            .nth(1)
            .and_then(|s| s.split(" cm/s").next())
            .unwrap()
            .parse()
            .unwrap();
        let velocity = format!("object.particle.velocity=[0, {}, 0]", -0.99 * limit);
        let run = acm(
            dir.path(),
            &[
                "run",
                floor,
                "--until",
                "0.02",
                "--audit",
                "--set",
                &velocity,
                "--set",
                &format!("contact.broad_phase={broad_phase}"),
            ],
        );
        assert!(run.status.success(), "{broad_phase}: {run:?}");
        let frame = std::fs::read_to_string(dir.path().join("out/frame_00001.obj")).unwrap();
        let particle = frame.split("o particle").nth(1).unwrap();
        let y: f64 = particle.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!(y > 0.0, "{broad_phase}: the particle ended at y = {y}");
    }
}
