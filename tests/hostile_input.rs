//! Hostile command lines, signals and a full disk: each fails fast with exit 2 and a message
//! that names the flag or file, or (Ctrl-C, SIGTERM) stops with whole output and exit 130.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{acm, acm_bin, SMALL_SHEET as GOOD};

/// A temp dir holding `p.toml` = [`GOOD`].
fn good_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), GOOD).unwrap();
    dir
}

/// Runs `acm args` in `dir`, asserts exit 2 with every needle in stderr, and returns stderr.
fn exits_2(dir: &Path, args: &[&str], needles: &[&str]) -> String {
    let out = acm(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} not in: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn set_errors_name_the_flag_and_key_not_a_line_of_the_rewritten_file() {
    let dir = good_dir();
    fn with(set: &str) -> [&str; 6] {
        ["run", "p.toml", "--out", "o", "--set", set]
    }
    // A misspelled key: the flag, the key, and the valid keys.
    let e = exits_2(
        dir.path(),
        &with("scene.durration=1"),
        &[
            "--set scene.durration=1",
            "unknown field `durration`",
            "duration",
        ],
    );
    let names_a_line = e
        .match_indices("p.toml:")
        .any(|(i, m)| e[i + m.len()..].starts_with(|c: char| c.is_ascii_digit()));
    assert!(!names_a_line, "no line of the file is to blame: {e}");
    // A type error in words a user knows.
    let e = exits_2(
        dir.path(),
        &with("scene.duration=abc"),
        &["--set scene.duration=abc", "expected a number"],
    );
    assert!(!e.contains("f64"), "{e}");
    // A range error found by validation names the flag and the field.
    exits_2(
        dir.path(),
        &with("object.sheet.material.density=-2"),
        &[
            "--set object.sheet.material.density=-2",
            "object[0].material.density (object \"sheet\")",
            "> 0",
        ],
    );
    // An error of the file itself still names its line, whatever is set beside it.
    std::fs::write(
        dir.path().join("p.toml"),
        GOOD.replace("bend = 0.1", "bend = -0.1"),
    )
    .unwrap();
    let e = exits_2(
        dir.path(),
        &with("scene.duration=0.2"),
        &["p.toml:14", "object[0].material.bend"],
    );
    assert!(!e.contains("--set"), "{e}");
}

#[test]
fn negative_values_reach_the_range_checks() {
    let dir = good_dir();
    exits_2(
        dir.path(),
        &["run", "p.toml", "--until", "-1"],
        &["--until must be a time >= 0, got -1"],
    );
    exits_2(
        dir.path(),
        &["check", ".", "--cutoff", "-1"],
        &["--cutoff must be >= 0"],
    );
}

#[test]
fn runs_of_more_frames_than_a_scene_may_have_are_refused_at_once() {
    let dir = good_dir();
    exits_2(
        dir.path(),
        &["run", "p.toml", "--until", "1e298"],
        &["--until: ", "frames of", "is more than 10000000"],
    );
    exits_2(
        dir.path(),
        &["run", "p.toml", "--frames", "18446744073709551615"],
        &["--frames: ", "is more than 10000000"],
    );
}

#[test]
fn huge_thread_counts_are_refused_at_once() {
    let dir = good_dir();
    for n in ["100000", "8192"] {
        let started = Instant::now();
        exits_2(
            dir.path(),
            &["run", "p.toml", "--threads", n],
            &["--threads", "logical cores"],
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }
    assert!(!dir.path().join("out").exists());
}

#[test]
fn bad_output_paths_fail_before_anything_is_written() {
    let dir = good_dir();
    for (flag, path) in [("--stats", "missing/s.json"), ("--trace", "missing/t.json")] {
        exits_2(
            dir.path(),
            &["run", "p.toml", "--out", "o", flag, path],
            &[&format!("{flag} missing/")],
        );
        let written: Vec<_> = std::fs::read_dir(dir.path().join("o")).unwrap().collect();
        assert!(written.is_empty(), "{flag}: {written:?}");
    }
    // An output directory that cannot be made, and one that is a file.
    std::fs::write(dir.path().join("file"), "").unwrap();
    exits_2(
        dir.path(),
        &["run", "p.toml", "--out", "file/o"],
        &["--out file/o"],
    );
    exits_2(
        dir.path(),
        &["run", "p.toml", "--out", "file"],
        &["--out file: exists and is not a directory"],
    );
}

/// Runs the default scene into `DIR/o`, sends `signal` once frame 1 is written, and checks
/// the run stops with exit 130, whole frames and a `stats.json` with the time reached.
fn a_signal_stops_the_run_with_whole_output(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    // The default scene takes seconds of wall time per simulated 0.1 s.
    let mut child = Command::new(acm_bin())
        .args(["run", "--out", "o"])
        .current_dir(dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !out.join("frame_00001.obj").exists() {
        assert!(started.elapsed() < Duration::from_secs(120), "no frame 1");
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{signal}");
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("stats.json")).unwrap()).unwrap();
    assert_eq!(stats["interrupted"], true);
    let reached = stats["simulated_seconds"].as_f64().unwrap();
    assert!(reached > 0.0 && reached < 1.0, "{reached}");
    // Every frame written is whole: `acm check` reads them all.
    let check = acm(dir.path(), &["check", "o"]);
    assert!(check.status.success(), "{check:?}");
    let frames = stats["frames"].as_u64().unwrap();
    assert!(out.join(format!("frame_{:05}.obj", frames - 1)).exists());
    assert!(!out.join(format!("frame_{frames:05}.obj")).exists());
}

#[test]
fn ctrl_c_writes_stats_with_the_time_reached_and_exits_130() {
    a_signal_stops_the_run_with_whole_output("INT");
}

#[test]
fn sigterm_stops_a_run_as_ctrl_c_does() {
    a_signal_stops_the_run_with_whole_output("TERM");
}

#[test]
fn a_full_disk_names_the_file_and_leaves_whole_frames_and_valid_stats() {
    // A 400 KiB tmpfs holds two OBJ frames of the default scene (144 KB each) and the CSVs;
    // the third frame does not fit. The tmpfs is mounted in a private mount namespace
    // (`unshare`), where the run's output is copied to `kept` before the namespace ends.
    let dir = tempfile::tempdir().unwrap();
    for sub in ["disk", "kept"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    let script = r#"mount -t tmpfs -o size=400k tmpfs disk || exit 99
"$0" run --out disk/o 2> kept/stderr
echo $? > kept/code
cp -a disk/o kept/o"#;
    let status = Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .arg(acm_bin())
        .current_dir(dir.path())
        .status()
        .unwrap();
    if status.code() == Some(99) || !status.success() {
        eprintln!("skipped: no tmpfs could be mounted in a user namespace here ({status})");
        return;
    }
    let kept = dir.path().join("kept");
    let stderr = std::fs::read_to_string(kept.join("stderr")).unwrap();
    let code = std::fs::read_to_string(kept.join("code")).unwrap();
    assert_eq!(code.trim(), "2", "{stderr}");
    assert!(
        stderr.contains("could not write disk/o/frame_00002.obj: No space left on device"),
        "{stderr}"
    );
    let mut names: Vec<String> = std::fs::read_dir(kept.join("o"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // No cut frame under a frame's name, and no temporary file left behind.
    let frames: Vec<&String> = names.iter().filter(|n| n.starts_with("frame_")).collect();
    assert_eq!(frames, ["frame_00000.obj", "frame_00001.obj"], "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with('.')), "{names:?}");
    let check = acm(dir.path(), &["check", "kept/o"]);
    assert!(check.status.success(), "{check:?}");
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(kept.join("o/stats.json")).unwrap()).unwrap();
    assert_eq!(stats["scene"], "sheet_on_sphere");
}
