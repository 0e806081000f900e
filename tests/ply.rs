//! `acm run --format ply` and `ply-strips`: binary frames that re-read to the OBJ frames'
//! positions (as floats), the engine's velocities and the same triangles, in the size the
//! header declares.

mod common;

use std::path::Path;

use acm::mesh::{parse_obj, strip_triangles};
use acm::output::FrameFormat;
use acm::prelude::Stepper;
use acm::Simulation;
use acm::{Frame, FrameSink, RunError};
use common::{acm, profiles_dir};
use glam::DVec3;

/// One PLY frame, read back: the object comments, vertex records (x y z vx vy vz), triangles
/// (from a `face` list or decoded from `tristrips`), file size.
struct Ply {
    objects: Vec<String>,
    vertices: Vec<[f32; 6]>,
    faces: Vec<[u32; 3]>,
    header_bytes: usize,
    file_bytes: usize,
}

/// A reader of exactly the layouts `PlyFrames` declares; any other header fails the test.
fn read_ply(path: &Path) -> Ply {
    let bytes = std::fs::read(path).unwrap();
    let end = b"end_header\n";
    let header_bytes = bytes.windows(end.len()).position(|w| w == end).unwrap() + end.len();
    let header = std::str::from_utf8(&bytes[..header_bytes]).unwrap();
    let mut lines = header.lines();
    assert_eq!(lines.next(), Some("ply"));
    assert_eq!(lines.next(), Some("format binary_little_endian 1.0"));
    let (mut objects, mut properties) = (Vec::new(), Vec::new());
    let (mut n, mut m, mut strips) = (None, None, false);
    for line in lines {
        let words: Vec<&str> = line.split(' ').collect();
        match words[..] {
            ["comment", "object", ..] => objects.push(words[2..].join(" ")),
            ["comment", ..] | ["end_header"] => {}
            ["element", "vertex", count] => n = Some(count.parse::<usize>().unwrap()),
            ["element", "face", count] => m = Some(count.parse::<usize>().unwrap()),
            ["element", "tristrips", "1"] => strips = true,
            ["property", "float", name] => properties.push(name.to_string()),
            ["property", "list", "uchar", "uint", "vertex_indices"] if m.is_some() => {}
            ["property", "list", "uint", "int", "vertex_indices"] if strips => {}
            _ => panic!("unexpected header line {line:?}"),
        }
    }
    assert_eq!(properties, ["x", "y", "z", "vx", "vy", "vz"]);
    let n = n.unwrap();
    let body = &bytes[header_bytes..];
    let f32_at = |k: usize| f32::from_le_bytes(body[k..k + 4].try_into().unwrap());
    let u32_at = |k: usize| u32::from_le_bytes(body[k..k + 4].try_into().unwrap());
    let vertices = (0..n)
        .map(|i| std::array::from_fn(|c| f32_at(24 * i + 4 * c)))
        .collect();
    let faces = match m {
        Some(m) => {
            assert_eq!(
                body.len(),
                n * 24 + m * 13,
                "the body is what the header declares"
            );
            (0..m)
                .map(|j| {
                    let k = n * 24 + 13 * j;
                    assert_eq!(body[k], 3, "every face is a triangle");
                    std::array::from_fn(|c| u32_at(k + 1 + 4 * c))
                })
                .collect()
        }
        None => {
            assert!(strips, "a face or a tristrips element");
            let count = u32_at(24 * n) as usize;
            assert_eq!(
                body.len(),
                n * 24 + 4 + 4 * count,
                "the body is what the header declares"
            );
            let list: Vec<u32> = (0..count).map(|i| u32_at(24 * n + 4 + 4 * i)).collect();
            strip_triangles(&list)
        }
    };
    Ply {
        objects,
        vertices,
        faces,
        header_bytes,
        file_bytes: bytes.len(),
    }
}

/// `triangles` each rotated to start at its smallest vertex, sorted: equal for two lists of
/// the same triangles with the same windings.
fn canonical(triangles: &[[u32; 3]]) -> Vec<[u32; 3]> {
    let mut out: Vec<[u32; 3]> = triangles
        .iter()
        .map(|t| {
            let first = (0..3).min_by_key(|&k| t[k]).unwrap();
            std::array::from_fn(|k| t[(first + k) % 3])
        })
        .collect();
    out.sort_unstable();
    out
}

/// The velocities of every vertex at each frame, from the library.
struct Velocities(Vec<Vec<DVec3>>);

impl FrameSink for Velocities {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        self.0.push(frame.model().state().v.clone());
        Ok(())
    }
}

#[test]
fn ply_frames_hold_the_obj_frames_positions_the_velocities_and_the_faces() {
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join("sheet_on_sphere.toml");
    let profile = profile.to_str().unwrap();
    for format in ["obj", "ply", "ply-strips"] {
        let run = acm(
            dir.path(),
            &[
                "run", profile, "--frames", "4", "--format", format, "--out", format,
            ],
        );
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
    let scene = acm::scene::profile::load(profile.as_ref(), &[]).unwrap();
    let mut sim = Simulation::new(&scene).unwrap();
    let mut velocities = Velocities(Vec::new());
    sim.run_until(3.0 * scene.frame_interval, &mut velocities)
        .unwrap();
    assert_eq!(velocities.0.len(), 4);
    let mut moved = false;
    for (index, v) in velocities.0.iter().enumerate() {
        let obj_path = FrameFormat::Obj.path(&dir.path().join("obj"), index as u64);
        let obj = parse_obj(&std::fs::read_to_string(&obj_path).unwrap(), "obj").unwrap();
        let faces = read_ply(&FrameFormat::Ply.path(&dir.path().join("ply"), index as u64));
        let strips = read_ply(&FrameFormat::Ply.path(&dir.path().join("ply-strips"), index as u64));
        assert_eq!(
            faces.faces, obj.triangles,
            "the same triangles, 0-based, in order"
        );
        assert_eq!(
            canonical(&strips.faces),
            canonical(&obj.triangles),
            "strips hold every triangle once, with its winding"
        );
        for ply in [&faces, &strips] {
            assert_eq!(ply.objects, ["sphere 0 642", "sheet 642 1024"]);
            assert_eq!(ply.vertices.len(), obj.positions.len());
            for ((record, x), v) in ply.vertices.iter().zip(&obj.positions).zip(v) {
                let expected = [x.x, x.y, x.z, v.x, v.y, v.z].map(|c| (c as f32).to_bits());
                assert_eq!(record.map(f32::to_bits), expected);
                moved |= v.length() > 1.0;
            }
            assert!(ply.header_bytes < 400);
        }
        let per_vertex = |ply: &Ply| ply.file_bytes as f64 / ply.vertices.len() as f64;
        assert!(per_vertex(&strips) <= 40.0, "{}", per_vertex(&strips));
        assert!(per_vertex(&faces) > 45.0, "{}", per_vertex(&faces));
    }
    assert!(moved, "the velocities compared are not all zero");
}

#[test]
fn a_run_in_one_format_removes_the_other_formats_frames() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["obj", "ply"] {
        let run = acm(dir.path(), &["run", "--frames", "2", "--format", format]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join("out"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("frame_"))
            .collect();
        names.sort();
        assert_eq!(names, [0, 1].map(|i| format!("frame_0000{i}.{format}")));
    }
}

#[test]
fn an_unknown_format_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let run = acm(dir.path(), &["run", "--frames", "1", "--format", "abc"]);
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("--format") && stderr.contains("expected obj, ply, ply-strips or usd"),
        "{stderr}"
    );
    assert!(!dir.path().join("out").exists(), "nothing is written");
}

#[test]
fn check_audits_ply_frames_and_refuses_a_mixed_directory() {
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join("particle_floor.toml");
    let run = acm(
        dir.path(),
        &[
            "run",
            profile.to_str().unwrap(),
            "--frames",
            "3",
            "--format",
            "ply",
            "--out",
            "f",
        ],
    );
    assert!(run.status.success(), "{run:?}");
    let check = acm(dir.path(), &["check", "f"]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{check:?}");
    assert!(stdout.contains("\"frames\":3"), "{stdout}");
    // An OBJ frame beside them: two runs' frames are not one sequence.
    std::fs::write(dir.path().join("f/frame_00003.obj"), "v 0 0 0\n").unwrap();
    let mixed = acm(dir.path(), &["check", "f"]);
    assert_eq!(mixed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&mixed.stderr).contains("both frame_*.obj and frame_*.ply"));
}
