//! The command line: default run, frames, stats, overrides, info.

mod common;

use acm::mesh::{parse_obj, TriMesh};
use common::{acm, profiles_dir};

fn read_frame(dir: &std::path::Path, index: u64) -> TriMesh {
    let path = acm::output::frame_path(dir, index);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_obj(&text, &path.display().to_string()).expect("frames are valid OBJ")
}

#[test]
#[ignore = "long scene run: cargo test --release -- --ignored (.ci/run runs it)"]
fn default_run_writes_a_consistent_frame_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let out = acm(dir.path(), &["--help"]);
    assert!(out.status.success());
    let out = acm(dir.path(), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("out"),
        "the run says where the frames are: {stdout}"
    );
    let frames = dir.path().join("out");
    let first = read_frame(&frames, 0);
    first.validate().unwrap();
    let count = std::fs::read_dir(&frames)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("frame_")
        })
        .count();
    assert_eq!(count, 26, "1 s at 25 frames/s, counting t = 0");
    let last = read_frame(&frames, 25);
    assert_eq!(last.positions.len(), first.positions.len());
    assert_eq!(last.triangles, first.triangles);
    // The sheet fell over the sphere; the sphere (the first object) did not move.
    let sheet_lowest = |m: &TriMesh| {
        m.positions[642..]
            .iter()
            .map(|p| p.y)
            .fold(f64::MAX, f64::min)
    };
    assert!(sheet_lowest(&last) < sheet_lowest(&first) - 10.0);
    assert_eq!(last.positions[..642], first.positions[..642]);
    // And nothing intersects: the exact audit over the whole sequence.
    let out = acm(dir.path(), &["check", "out"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(frames.join("stats.json")).unwrap()).unwrap();
    assert_eq!(stats["frames"], 26);
    assert!(stats["events"]["stretching"].as_u64().unwrap() > 0);
    assert!(stats["wall_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(stats["model"]["vertices"], 642 + 32 * 32);
    assert!(stats["contact"]["deepest_layer"].as_u64().unwrap() >= 1);
    let energy = std::fs::read_to_string(frames.join("energy.csv")).unwrap();
    assert_eq!(energy.lines().count(), 27);
}

#[test]
fn frames_and_until_limit_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = acm(dir.path(), &["run", "--frames", "3", "--out", "a"]);
    assert!(out.status.success());
    assert!(acm::output::frame_path(&dir.path().join("a"), 2).exists());
    assert!(!acm::output::frame_path(&dir.path().join("a"), 3).exists());
    let out = acm(
        dir.path(),
        &["run", "--until", "0.1", "--out", "b", "--stats", "s.json"],
    );
    assert!(out.status.success());
    assert!(acm::output::frame_path(&dir.path().join("b"), 2).exists());
    assert!(!acm::output::frame_path(&dir.path().join("b"), 3).exists());
    assert!(dir.path().join("s.json").exists());
}

#[test]
fn set_overrides_change_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let mut args = vec!["run", "--frames", "4", "--out", name];
        args.extend_from_slice(extra);
        let out = acm(dir.path(), &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        read_frame(&dir.path().join(name), 3)
    };
    let base = run("base", &[]);
    let soft = run("soft", &["--set", "object.sheet.material.stretch=100"]);
    assert_ne!(base.positions, soft.positions);
    let still = run("still", &["--set", "scene.gravity=[0, 0, 0]"]);
    assert_eq!(
        still.positions,
        read_frame(&dir.path().join("still"), 0).positions
    );
    let again = run("again", &[]);
    assert_eq!(base.positions, again.positions, "runs are deterministic");
}

#[test]
fn thread_count_does_not_change_frames() {
    let dir = tempfile::tempdir().unwrap();
    let runs = [
        ("t1", "1", "active"),
        ("t2", "2", "active"),
        ("t2p", "2", "passive"),
    ];
    for (name, threads, wait) in runs.into_iter().chain([("t3", "3", "active")]) {
        let out = acm(
            dir.path(),
            &[
                "run",
                "--frames",
                "6",
                "--threads",
                threads,
                "--wait",
                wait,
                "--out",
                name,
            ],
        );
        assert!(out.status.success());
    }
    let frame = |name: &str| std::fs::read(acm::output::frame_path(&dir.path().join(name), 5));
    let a = frame("t1").unwrap();
    for name in ["t2", "t2p", "t3"] {
        assert_eq!(a, frame(name).unwrap(), "{name}");
    }
}

#[test]
fn a_bad_wait_policy_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = acm(dir.path(), &["run", "--wait", "busy", "--frames", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--wait") && stderr.contains("expected active or passive"));
    assert!(!dir.path().join("out").exists(), "nothing written");
}

#[test]
fn info_summarises_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join("pinned_sheet.toml");
    let out = acm(dir.path(), &["info", profile.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.contains("1024 vertices"), "{stdout}");
    assert!(stdout.contains("springs"), "{stdout}");
    assert!(stdout.contains("clock"), "{stdout}");
    assert!(stdout.contains("contact: off"), "{stdout}");
    let profile = profiles_dir().join("sheet_on_sphere.toml");
    let out = acm(dir.path(), &["info", profile.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.contains("layer 1 clock"), "{stdout}");
}

/// Runs `acm run PROFILE --until UNTIL EXTRA... --trace trace.json` in a temp dir; returns the
/// dir, the parsed trace and stderr (after checking the run succeeded).
fn traced_run(
    profile: &str,
    until: &str,
    extra: &[&str],
) -> (tempfile::TempDir, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join(profile);
    let mut args = vec!["run", profile.to_str().unwrap(), "--until", until];
    args.extend_from_slice(extra);
    args.extend(["--trace", "trace.json"]);
    let out = acm(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let trace =
        serde_json::from_slice(&std::fs::read(dir.path().join("trace.json")).unwrap()).unwrap();
    (dir, trace, stderr)
}

#[test]
fn trace_writes_a_chrome_trace_whose_event_zones_match_the_event_count() {
    let (dir, trace, stderr) = traced_run("spring_wall.toml", "0.5", &[]);
    assert!(stderr.contains("penalty"), "the phase table: {stderr}");
    let events = trace["traceEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["name"] == "reschedule"));
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out/stats.json")).unwrap()).unwrap();
    assert_eq!(
        trace["otherData"]["zone_totals"]["event"]["count"], stats["events_total"],
        "one event zone per processed event"
    );
    // The loop's time outside parallel tasks is part of its wall time, and printed.
    let outside = trace["otherData"]["outside_tasks"].as_f64().unwrap();
    let wall = stats["wall_seconds"].as_f64().unwrap();
    assert!(outside > 0.0 && outside <= wall, "{outside} s of {wall} s");
    assert!(stderr.contains("outside tasks: "), "{stderr}");
}

#[test]
fn trace_shows_the_parallel_phases_on_their_worker_threads() {
    let (_dir, trace, _) = traced_run("drape_10k.toml", "0.02", &["--threads", "2"]);
    // Each rayon task of a parallel phase is a zone on the thread that ran it: the tasks of
    // about 360 whole-mesh ticks of 12,562 vertices land on both workers (enough ticks that
    // a machine busy with other tests still lets the second worker take some).
    let threads: std::collections::BTreeSet<u64> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "force_task")
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    assert!(threads.len() >= 2, "force tasks ran on {threads:?}");
    // Every thread is named for the trace viewer: the loop's, and the workers by index.
    let names: std::collections::BTreeMap<u64, String> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            let name = e["args"]["name"].as_str().unwrap().to_string();
            (e["tid"].as_u64().unwrap(), name)
        })
        .collect();
    assert!(threads.iter().all(|t| names.contains_key(t)), "{names:?}");
    assert!(
        names.values().any(|n| n.starts_with("event loop (worker ")),
        "{names:?}"
    );
}

#[test]
fn scaling_models_a_run_from_its_traces_on_one_and_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join("drape_10k.toml");
    let profile = profile.to_str().unwrap();
    for threads in ["1", "2"] {
        let (trace, out) = (format!("trace{threads}.json"), format!("out{threads}"));
        let args = ["run", profile, "--until", "0.01", "--threads", threads];
        succeeds(
            dir.path(),
            &[&args[..], &["--trace", &trace, "--out", &out]].concat(),
        );
    }
    let report = succeeds(
        dir.path(),
        &["scaling", "trace1.json", "trace2.json", "--threads", "2,16"],
    );
    // One row per phase: the event row counts every event of the run.
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out1/stats.json")).unwrap())
            .unwrap();
    let events = (report.lines())
        .find_map(|l| l.strip_prefix("event "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no event row: {report}"));
    assert_eq!(events, stats["events_total"].to_string(), "{report}");
    // With the fork costs of two threads, the model gives back the two-thread run's speed-up.
    let measured = (report.lines())
        .find_map(|l| l.strip_prefix("measured on two threads: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no measurement: {report}"));
    let predicted = (report.lines())
        .find_map(|l| l.strip_prefix("speed-up, forks as on two threads"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no prediction: {report}"));
    assert_eq!(predicted, measured, "{report}");
    // Bad input: exit 2, naming the file.
    for (args, needle) in [
        (
            ["trace2.json", "trace1.json"],
            "trace2.json: traced on 2 threads",
        ),
        (
            ["trace1.json", "out1/stats.json"],
            "out1/stats.json: not a trace",
        ),
        (["trace1.json", "missing.json"], "missing.json: cannot read"),
    ] {
        let out = acm(dir.path(), &[&["scaling"][..], &args].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
}

/// A 4 x 4 vertex sheet as OBJ text with a texture coordinate on every corner, listed in the
/// reverse of the vertex order (so a writer that used vertex indices for them would differ).
fn textured_sheet_obj() -> String {
    let n = 4;
    let mut text = String::new();
    for j in 0..n {
        for i in 0..n {
            text += &format!("v {:?} 0.0 {:?}\n", i as f64, j as f64);
        }
    }
    for k in (0..n * n).rev() {
        let (i, j) = (k % n, k / n);
        text += &format!("vt {:?} {:?}\n", i as f64 / 4.0, j as f64 / 4.0);
    }
    let uv = |v: usize| n * n - v;
    for j in 0..n - 1 {
        for i in 0..n - 1 {
            let [a, b, c, d] = [
                j * n + i,
                j * n + i + 1,
                (j + 1) * n + i + 1,
                (j + 1) * n + i,
            ];
            let corner = |v: usize| format!("{}/{}", v + 1, uv(v));
            text += &format!(
                "f {} {} {} {}\n",
                corner(a),
                corner(d),
                corner(c),
                corner(b)
            );
        }
    }
    text
}

#[test]
fn obj_frames_keep_the_input_texture_coordinates_when_every_object_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let input = textured_sheet_obj();
    std::fs::write(dir.path().join("cloth.obj"), &input).unwrap();
    let cloth = r#"
[scene]
name = "uv"
duration = 1.0
frame_interval = 0.01

[[object]]
name = "cloth"
mesh = { generator = "obj", path = "cloth.obj" }

[object.material]
density = 0.001
stretch = 1000.0
bend = 0.1
"#;
    let ball = "[[object]]\nname = \"ball\"\n\
                mesh = { generator = \"icosphere\", radius = 1.0, subdivisions = 1 }\n\
                translate = [0.0, -10.0, 0.0]\nfixed = true\n";
    std::fs::write(dir.path().join("textured.toml"), cloth).unwrap();
    std::fs::write(dir.path().join("mixed.toml"), format!("{cloth}{ball}")).unwrap();
    let expected = parse_obj(&input, "cloth.obj").unwrap();
    assert!(expected.uvs.is_some());
    let vt_lines = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("vt "))
            .map(String::from)
            .collect()
    };
    for (profile, out) in [("textured.toml", "textured"), ("mixed.toml", "mixed")] {
        let run = acm(dir.path(), &["run", profile, "--frames", "3", "--out", out]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let check = acm(dir.path(), &["check", out]);
        assert_eq!(
            check.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
    for index in 0..3 {
        let frame = read_frame(&dir.path().join("textured"), index);
        assert_eq!(frame.triangles, expected.triangles);
        assert_eq!(
            frame.uvs, expected.uvs,
            "the same vt lines and face references"
        );
        let text =
            std::fs::read_to_string(acm::output::frame_path(&dir.path().join("textured"), index))
                .unwrap();
        assert_eq!(vt_lines(&text), vt_lines(&input));
        let mixed =
            std::fs::read_to_string(acm::output::frame_path(&dir.path().join("mixed"), index))
                .unwrap();
        assert!(
            vt_lines(&mixed).is_empty() && !mixed.contains('/'),
            "a generated object has no UVs, so no object gets any"
        );
        assert_eq!(read_frame(&dir.path().join("mixed"), index).uvs, None);
    }
    // A malformed `vt` line or reference is bad input naming the file and the line.
    for (bad, line) in [
        (input.replacen("vt 0.75", "vt zero", 1), 17),
        (input.replacen("/16 ", "/17 ", 1), 33),
    ] {
        std::fs::write(dir.path().join("cloth.obj"), bad).unwrap();
        let run = acm(
            dir.path(),
            &["run", "textured.toml", "--frames", "2", "--out", "bad"],
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("cloth.obj:{line}:")), "{stderr}");
    }
}

/// Runs `acm args` in `dir`, checks it succeeds, and returns its standard output.
fn succeeds(dir: &std::path::Path, args: &[&str]) -> String {
    let out = acm(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_profile_named_without_a_path_is_found_in_profiles_and_the_run_says_how_to_look_at_it() {
    let dir = tempfile::tempdir().unwrap();
    let stdout = succeeds(
        dir.path(),
        &["run", "pinned_sheet", "--frames", "3", "--out", "o"],
    );
    assert!(
        stdout.starts_with("pinned_sheet: 3 frames in o"),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some(
            "look at it: acm view o (a page for the browser), acm render o (a picture), acm \
             check o (the intersection audit)"
        )
    );
    let out = acm(dir.path(), &["info", "no_such_profile"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no_such_profile"));
}

/// The pixels of a PNG file: width, height and RGB bytes.
fn read_png(path: &std::path::Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut rgb = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut rgb).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    rgb.truncate(info.buffer_size());
    (info.width, info.height, rgb)
}

#[test]
fn render_draws_a_frame_and_view_writes_a_page_holding_every_frame() {
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join("pinned_sheet.toml");
    let profile = profile.to_str().unwrap();
    succeeds(dir.path(), &["run", profile, "--frames", "6", "--out", "o"]);
    for (frame, png) in [("0", "first.png"), ("5", "last.png")] {
        let args = [
            "render", "o", "--frame", frame, "--size", "96x72", "--out", png,
        ];
        succeeds(dir.path(), &args);
    }
    let (first, last) = (
        read_png(&dir.path().join("first.png")),
        read_png(&dir.path().join("last.png")),
    );
    assert_eq!((first.0, first.1), (96, 72));
    // The top-left corner is background; the sheet covers a good part of the picture.
    let corner = &first.2[..3];
    let covered = first.2.chunks(3).filter(|p| *p != corner).count();
    assert!(covered > 96 * 72 / 20, "{covered} pixels drawn");
    assert_ne!(first.2, last.2, "the sheet swung between frames 0 and 5");
    // Without --frame and --out: the last frame, beside the frames.
    succeeds(dir.path(), &["render", "o", "--size", "96x72"]);
    assert_eq!(read_png(&dir.path().join("o/frame_00005.png")).2, last.2);
    for (args, says) in [
        (
            &["render", "o", "--frame", "6"][..],
            "--frame 6: o holds frames 0 to 5",
        ),
        (
            &["render", "o", "--size", "0x10"][..],
            "--size 0x10: expected WIDTHxHEIGHT",
        ),
        (&["render", "nothing"][..], "nothing"),
        (&["view", "."][..], "run a scene into it first"),
    ] {
        let out = acm(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    succeeds(dir.path(), &["view", "o"]);
    let page = std::fs::read_to_string(dir.path().join("o/view.html")).unwrap();
    assert!(
        page.contains("<canvas") && !page.contains("http"),
        "self-contained"
    );
    let data = page.split("id=\"acm-data\">").nth(1).unwrap();
    let data: serde_json::Value =
        serde_json::from_str(data.split("</script>").next().unwrap()).unwrap();
    assert_eq!(data["frames"], 6);
    assert_eq!(data["vertices"], 1024);
    // Six frames of 1,024 vertices of three floats, in base64.
    assert_eq!(
        data["positions"].as_str().unwrap().len(),
        (6 * 1024 * 12usize).div_ceil(3) * 4
    );
}

#[test]
fn glam_is_reexported_at_the_crate_root() {
    // An embedding program names positions and velocities with the engine's own glam.
    let scene = acm::scene::profile::load(&profiles_dir().join("pinned_sheet.toml"), &[]).unwrap();
    let mut sim = acm::Simulation::new(&scene).unwrap();
    sim.set_velocity(5, acm::glam::DVec3::new(0.0, 1.0, 0.0))
        .unwrap();
    assert_eq!(
        acm::FrameSource::model(&sim).state().v[5],
        acm::glam::DVec3::Y
    );
}
