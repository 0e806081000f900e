//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

use acm::check::{audit_positions, measure, AuditReport};
use acm::mesh;
use acm::prelude::FrameSource;
use acm::scene::{Material, Scene, SceneObject};
use acm::{Frame, FrameSink, RunError, Simulation};
use glam::DVec3;

/// Total linear momentum of `sim` now.
pub fn momentum(sim: &Simulation) -> DVec3 {
    let mut x = Vec::new();
    sim.model().positions_at(sim.time(), &mut x);
    measure(sim, sim.time(), &x).momentum
}

/// The sum of the vertices' momentum magnitudes: the scale of a relative momentum drift.
pub fn momentum_scale(sim: &Simulation) -> f64 {
    let state = sim.model().state();
    (0..state.len())
        .map(|i| state.mass[i] * state.v[i].length())
        .sum()
}

/// A frame sink that collects the exact intersection audit of every frame.
pub struct Audited(pub AuditReport);

impl FrameSink for Audited {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        audit_positions(
            frame.positions,
            frame.model().triangles(),
            1.0,
            frame.index,
            &mut self.0,
        )
        .map_err(|e| RunError::Internal {
            time: frame.time,
            event: 0,
            message: e.to_string(),
        })
    }
}

/// A small deterministic random generator (splitmix64).
pub struct Rng(pub u64);

impl Rng {
    /// Next uniform value in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform value in [-a, a).
    pub fn symmetric(&mut self, a: f64) -> f64 {
        a * (2.0 * self.next_f64() - 1.0)
    }

    /// A vector with components uniform in [-a, a).
    pub fn vec(&mut self, a: f64) -> DVec3 {
        DVec3::new(self.symmetric(a), self.symmetric(a), self.symmetric(a))
    }
}

/// A scene with one free sheet of `n x n` vertices, `size` cm across, no gravity.
pub fn sheet_scene(n: usize, size: f64, material: Material) -> Scene {
    Scene {
        name: "test_sheet".into(),
        duration: 1.0,
        frame_interval: 0.01,
        gravity: DVec3::ZERO,
        objects: vec![SceneObject {
            name: "sheet".into(),
            mesh: mesh::sheet(n, n, size, size).expect("valid sheet"),
            material,
            fixed: false,
            velocity: DVec3::ZERO,
            particle_mass: None,
        }],
        ..Scene::default()
    }
}

/// A small valid profile: one free 4 x 4 sheet, 0.1 s, two frames.
pub const SMALL_SHEET: &str = r#"
[scene]
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
"#;

/// Path of the `acm` binary built for the tests.
pub fn acm_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_acm"))
}

/// Runs `acm` with `args` in `dir`.
pub fn acm(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(acm_bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the acm binary runs")
}

/// The repository's `profiles/` directory.
pub fn profiles_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("profiles")
}

/// Two small sheets thrown at each other in zero gravity (1,100 cm/s closing speed).
pub fn head_on() -> Scene {
    let sheet = |name: &str, y: f64, vy: f64| SceneObject {
        name: name.into(),
        mesh: mesh::sheet(6, 6, 10.0, 10.0).unwrap().transformed(
            DVec3::ONE,
            glam::DQuat::from_rotation_y(0.3 * y),
            DVec3::new(0.2 * y, y, 0.0),
        ),
        material: Material {
            density: 0.01,
            stretch: 5000.0,
            stretch_damping: 0.0,
            bend: 1.0,
            bend_damping: 0.0,
            drag: 0.0,
        },
        fixed: false,
        velocity: DVec3::new(0.0, vy, 0.0),
        particle_mass: None,
    };
    let mut scene = Scene {
        name: "head_on".into(),
        gravity: DVec3::ZERO,
        frame_interval: 2e-4,
        objects: vec![sheet("a", 1.0, -500.0), sheet("b", -1.0, 600.0)],
        ..Scene::default()
    };
    scene.contact.enabled = true;
    scene
}
