//! Bad input never panics: it exits with code 2 and a message naming the problem.

mod common;

use std::path::Path;

use common::{acm, SMALL_SHEET as GOOD};

/// Writes `profile` (and any extra files) into a temp dir, runs `acm run` on it, and checks exit
/// code 2 and that stderr mentions every needle.
fn rejects(profile: &str, extra: &[(&str, &str)], needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), profile).unwrap();
    for (name, text) in extra {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = acm(dir.path(), &["run", "p.toml", "--out", "o"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} not in: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!Path::new(&dir.path().join("o/frame_00000.obj")).exists());
}

#[test]
fn the_good_profile_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), GOOD).unwrap();
    let out = acm(dir.path(), &["run", "p.toml", "--out", "o"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn missing_file() {
    rejects("", &[], &[]);
    let dir = tempfile::tempdir().unwrap();
    let out = acm(dir.path(), &["run", "nope.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.toml"));
}

#[test]
fn toml_syntax_error_names_the_line() {
    rejects(
        &GOOD.replace("duration = 0.1", "duration = = 0.1"),
        &[],
        &["p.toml:4"],
    );
}

#[test]
fn unknown_key() {
    rejects(
        &GOOD.replace("stretch = 1000.0", "strech = 1000.0"),
        &[],
        &["strech"],
    );
}

#[test]
fn wrong_type() {
    rejects(
        &GOOD.replace("duration = 0.1", "duration = \"long\""),
        &[],
        &["p.toml:4"],
    );
}

#[test]
fn missing_field() {
    rejects(
        &GOOD.replace("frame_interval = 0.05\n", ""),
        &[],
        &["frame_interval"],
    );
}

#[test]
fn nan_density_names_field_and_line() {
    rejects(
        &GOOD.replace("density = 0.001", "density = nan"),
        &[],
        &["p.toml:12", "object[0].material.density", "NaN"],
    );
}

#[test]
fn negative_stiffness() {
    rejects(
        &GOOD.replace("stretch = 1000.0", "stretch = -1.0"),
        &[],
        &["object[0].material.stretch"],
    );
}

#[test]
fn bad_generator_argument() {
    rejects(
        &GOOD.replace("nx = 4", "nx = 1"),
        &[],
        &["object[0].mesh", "p.toml:9"],
    );
}

#[test]
fn unknown_generator() {
    rejects(&GOOD.replace("\"sheet\"", "\"blob\""), &[], &["blob"]);
}

#[test]
fn a_layer_as_wide_as_the_scene_is_refused_before_its_pairs_are_listed() {
    // The sheet spans 14.14 cm. At eta1 = 1e300, `particle_box` (11,265 vertices) was still
    // listing every pair of its primitives as candidates after 30 s, before its start could
    // be found too close.
    for eta1 in ["15.0", "1e300"] {
        rejects(
            &format!("{GOOD}\n[contact]\neta1 = {eta1}\n"),
            &[],
            &["contact.eta1", "as wide as the whole scene", "1.414e1 cm"],
        );
    }
}

#[test]
fn safety_above_one() {
    rejects(
        &format!("{GOOD}\n[integrator]\nsafety = 2.0\n"),
        &[],
        &["integrator.safety"],
    );
}

#[test]
fn selection_of_unknown_object() {
    let profile = format!("{GOOD}\n[[fixed]]\nobject = \"shet\"\nselect = {{ all = true }}\n");
    rejects(&profile, &[], &["fixed[0].object", "shet"]);
}

#[test]
fn selection_out_of_range() {
    let profile =
        format!("{GOOD}\n[[fixed]]\nobject = \"sheet\"\nselect = {{ vertices = [99] }}\n");
    rejects(&profile, &[], &["fixed[0]", "99"]);
}

#[test]
fn script_keys_must_increase() {
    let profile = format!(
        "{GOOD}\n[[script]]\nobject = \"sheet\"\nselect = {{ vertices = [0] }}\n\
         keys = [{{ time = 0.5, velocity = [0, 1, 0] }}, {{ time = 0.2, velocity = [0, 0, 0] }}]\n"
    );
    rejects(&profile, &[], &["script[0].keys[1].time"]);
}

const OBJ_PROFILE: &str = r#"
[scene]
name = "t"
duration = 0.1
frame_interval = 0.05

[[object]]
name = "m"
mesh = { generator = "obj", path = "m.obj" }

[object.material]
density = 0.001
stretch = 1000.0
bend = 0.1
"#;

#[test]
fn obj_with_out_of_range_index() {
    rejects(
        OBJ_PROFILE,
        &[("m.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n")],
        &["m.obj", "4"],
    );
}

#[test]
fn obj_with_degenerate_triangle() {
    rejects(
        OBJ_PROFILE,
        &[(
            "m.obj",
            "v 0 0 0\nv 1 0 0\nv 2 0 0\nv 0 1 0\nf 1 2 3\nf 1 2 4\n",
        )],
        &["triangle 0", "degenerate"],
    );
}

#[test]
fn obj_with_non_manifold_edge() {
    rejects(
        OBJ_PROFILE,
        &[(
            "m.obj",
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 -1 0\nv 0 0 1\nf 1 2 3\nf 2 1 4\nf 1 2 5\n",
        )],
        &["edge (0, 1)", "3 triangles"],
    );
}

#[test]
fn obj_with_nan_coordinate() {
    rejects(
        OBJ_PROFILE,
        &[("m.obj", "v 0 0 nan\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")],
        &["m.obj:1", "not finite"],
    );
}

#[test]
fn obj_missing() {
    rejects(OBJ_PROFILE, &[], &["m.obj"]);
}

#[test]
fn bad_command_line_values() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), GOOD).unwrap();
    for args in [
        vec!["run", "p.toml", "--frames", "0"],
        vec!["run", "p.toml", "--until", "nan"],
        vec!["run", "p.toml", "--threads", "0"],
        vec!["run", "p.toml", "--set", "scene.duration"],
        vec!["run", "p.toml", "--set", "object.7.material.bend=1"],
        vec!["run", "p.toml", "--set", "scene.duration=-1"],
    ] {
        let out = acm(dir.path(), &args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
