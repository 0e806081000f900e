//! The synchronous baseline on the command line: `--set integrator=sync`, `acm compare`, and
//! bad `[sync]` parameters.

mod common;

use common::{acm, profiles_dir};

fn squares() -> String {
    profiles_dir()
        .join("sync_squares_plane.toml")
        .display()
        .to_string()
}

#[test]
fn set_integrator_sync_writes_frames_stats_energy_and_passes_the_audit() {
    let dir = tempfile::tempdir().unwrap();
    let profile = squares();
    let out = acm(
        dir.path(),
        &[
            "run",
            &profile,
            "--set",
            "integrator=sync",
            "--until",
            "0.4",
            "--out",
            "o",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("synchronous steps"), "{stdout}");
    let o = dir.path().join("o");
    assert!(o.join("frame_00010.obj").exists());
    assert!(!o.join("frame_00011.obj").exists());
    let stats = std::fs::read_to_string(o.join("stats.json")).unwrap();
    assert!(stats.contains("\"integrator\": \"sync\""), "{stats}");
    assert!(stats.contains("\"failsafe\": \"impact_zones\""), "{stats}");
    let energy = std::fs::read_to_string(o.join("energy.csv")).unwrap();
    assert_eq!(energy.lines().count(), 12, "header and 11 frames");
    let check = acm(dir.path(), &["check", "o"]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}

#[test]
fn compare_prints_a_row_per_integrator() {
    let dir = tempfile::tempdir().unwrap();
    let profile = squares();
    let out = acm(
        dir.path(),
        &[
            "compare",
            &profile,
            "--until",
            "0.2",
            "--set",
            "sync.failsafe=\"inelastic_projection\"",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "wall (s)",
        "intersect.",
        "min dist",
        "energy drift",
        "mom. drift",
        "\nacm ",
        "\nsync (inelastic projection) ",
        "\nimplicit ",
    ] {
        assert!(stdout.contains(needle), "{needle:?} not in:\n{stdout}");
    }
    assert!(!stdout.contains("stopped early"), "{stdout}");
}

const PROFILE: &str = r#"[scene]
name = "t"
duration = 0.1
frame_interval = 0.05

[[object]]
name = "sheet"
mesh = { generator = "sheet", nx = 4, ny = 4, width = 10.0, depth = 10.0 }

[object.material]
density = 0.001
stretch = 1000.0
bend = 0.1

[integrator]
method = "sync"

[sync]
step = 0.001
failsafe = "impact_zones"
"#;

/// Runs `acm run` on `profile` with `overrides`; checks exit 2, no frame, and every needle in
/// stderr.
fn rejects(profile: &str, overrides: &[&str], needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), profile).unwrap();
    let mut args = vec!["run", "p.toml", "--out", "o"];
    for o in overrides {
        args.extend(["--set", o]);
    }
    let out = acm(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} not in: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!dir.path().join("o/frame_00000.obj").exists());
}

#[test]
fn the_sync_profile_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), PROFILE).unwrap();
    let out = acm(dir.path(), &["run", "p.toml", "--out", "o"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bad_sync_parameters_exit_2_with_file_and_line() {
    rejects(
        &PROFILE.replace("\"impact_zones\"", "\"rigid\""),
        &[],
        &["p.toml:20", "rigid", "inelastic_projection"],
    );
    rejects(
        &PROFILE.replace("step = 0.001", "step = -1.0"),
        &[],
        &["p.toml:19", "sync.step", "> 0"],
    );
    rejects(
        &PROFILE.replace("step = 0.001", "thickness = nan"),
        &[],
        &["p.toml:19", "sync.thickness"],
    );
    rejects(
        &PROFILE.replace("step = 0.001", "max_failsafe_iterations = 0"),
        &[],
        &["p.toml:19", "sync.max_failsafe_iterations"],
    );
    rejects(
        &PROFILE.replace("method = \"sync\"", "method = \"euler\""),
        &[],
        &["p.toml:16", "euler"],
    );
    rejects(
        &PROFILE.replace("step = 0.001", "stepp = 0.001"),
        &[],
        &["p.toml:19", "stepp"],
    );
    rejects(PROFILE, &["integrator=verlet"], &["verlet", "acm", "sync"]);
    rejects(PROFILE, &["sync.friction=-0.5"], &["sync.friction"]);
}

#[test]
fn frames_are_bit_identical_on_one_and_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir()
        .join("sync_squares_incline.toml")
        .display()
        .to_string();
    for (threads, out) in [("1", "one"), ("2", "two")] {
        let run = acm(
            dir.path(),
            &[
                "run",
                &profile,
                "--set",
                "integrator=sync",
                "--until",
                "0.6",
                "--threads",
                threads,
                "--out",
                out,
            ],
        );
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
    for frame in 0..=15 {
        let name = format!("frame_{frame:05}.obj");
        let one = std::fs::read(dir.path().join("one").join(&name)).unwrap();
        let two = std::fs::read(dir.path().join("two").join(&name)).unwrap();
        assert!(one == two, "{name} differs between 1 and 2 threads");
    }
}
