//! The broad phases (issue 4): every kind passes the contact scenes with the per-event audit
//! (which checks the broad phase's own invariants too) and the exact intersection audit of every
//! frame; `contact.broad_phase` is validated like every other field.

mod common;

use acm::check::AuditReport;
use acm::kds::BroadPhaseKind;
use acm::mesh;
use acm::prelude::{FrameSource, Stepper};
use acm::scene::{profile, Material, Scene, SceneObject};
use acm::{NoFrames, Simulation};
use common::{acm, head_on, profiles_dir, Audited};
use glam::DVec3;

/// Runs `scene` with broad phase `kind` to `until`, audited after every event and every frame;
/// returns the simulation.
fn run_audited(mut scene: Scene, kind: BroadPhaseKind, until: f64) -> Simulation {
    scene.contact.broad_phase = kind;
    let mut sim = Simulation::new(&scene).unwrap();
    sim.set_audit(true);
    let mut sink = Audited(AuditReport::default());
    if let Err(e) = sim.run_until(until, &mut sink) {
        panic!("{}: {e}", kind.name());
    }
    assert!(sink.0.frames > 0);
    assert_eq!(
        sink.0.intersecting_pairs,
        0,
        "{}: {:?}",
        kind.name(),
        sink.0.first_bad
    );
    sim
}

/// A particle dropped on a floor (the walkthrough of thesis §5.1).
fn particle_on_floor() -> Scene {
    let floor = SceneObject {
        name: "floor".into(),
        mesh: mesh::sheet(2, 2, 10.0, 10.0).unwrap(),
        material: Material::default(),
        fixed: true,
        velocity: DVec3::ZERO,
        particle_mass: None,
    };
    let particle = SceneObject::particle("particle", DVec3::new(0.3, 0.5, 0.2), 0.01);
    let mut scene = Scene {
        name: "particle".into(),
        objects: vec![floor, particle],
        ..Scene::default()
    };
    scene.contact.enabled = true;
    scene
}

#[test]
fn every_broad_phase_stops_the_falling_particle() {
    for kind in BroadPhaseKind::ALL {
        let sim = run_audited(particle_on_floor(), kind, 0.5);
        let contact = sim.stats().contact.clone().unwrap();
        assert!(contact.deepest_layer >= 1, "{}", kind.name());
        assert_eq!(contact.broad_phase.kind, kind.name());
    }
}

#[test]
fn every_broad_phase_keeps_colliding_sheets_apart() {
    for kind in BroadPhaseKind::ALL {
        let sim = run_audited(head_on(), kind, 0.004);
        let contact = sim.stats().contact.clone().unwrap();
        assert!(
            contact.deepest_layer >= 1,
            "{}: the sheets met",
            kind.name()
        );
    }
}

#[test]
fn every_broad_phase_drapes_the_sheet_on_the_sphere_cleanly() {
    let overrides = ["object.sheet.translate=[0.0, 20.3, 0.0]".to_string()];
    let scene = profile::load(&profiles_dir().join("sheet_on_sphere.toml"), &overrides).unwrap();
    for kind in BroadPhaseKind::ALL {
        let sim = run_audited(scene.clone(), kind, 0.03);
        let contact = sim.stats().contact.clone().unwrap();
        assert!(
            contact.deepest_layer >= 1,
            "{}: the sheet touched",
            kind.name()
        );
    }
}

#[test]
fn kinetic_list_hands_over_fewer_pairs_than_the_interim_broad_phase() {
    let overrides = ["object.sheet.translate=[0.0, 20.6, 0.0]".to_string()];
    let scene = profile::load(&profiles_dir().join("sheet_on_sphere.toml"), &overrides).unwrap();
    let peak = |kind: BroadPhaseKind| {
        let mut scene = scene.clone();
        scene.contact.broad_phase = kind;
        let mut sim = Simulation::new(&scene).unwrap();
        sim.run_until(0.03, &mut NoFrames).unwrap();
        sim.stats().contact.clone().unwrap()
    };
    let kdop = peak(BroadPhaseKind::Kdop18);
    let swept = peak(BroadPhaseKind::SweptBoxes);
    assert!(kdop.certificates_peak < swept.certificates_peak);
    // The eager collapse keeps the list smaller on average than the lazy hand-back.
    let lazy = peak(BroadPhaseKind::Kdop18Lazy);
    let mean = |c: &acm::engine::ContactStats| c.broad_phase.list.as_ref().unwrap().pair_seconds;
    assert!(
        mean(&kdop) <= mean(&lazy),
        "{} > {}",
        mean(&kdop),
        mean(&lazy)
    );
}

#[test]
fn every_broad_phase_gives_bit_identical_positions() {
    // Layers are super-events applied in pair-key order and zero outside their layer, so the
    // broad phase decides only when to look, never what happens; the layers' energy is summed
    // in pair order, so it does not depend on it either.
    let overrides = ["object.sheet.translate=[0.0, 20.6, 0.0]".to_string()];
    let scene = profile::load(&profiles_dir().join("sheet_on_sphere.toml"), &overrides).unwrap();
    let run = |kind: BroadPhaseKind| {
        let mut scene = scene.clone();
        scene.contact.broad_phase = kind;
        let mut sim = Simulation::new(&scene).unwrap();
        sim.run_until(0.08, &mut NoFrames).unwrap();
        let mut x = Vec::new();
        sim.model().positions_at(0.08, &mut x);
        let penalty = sim.contact_energy(&x);
        (x, penalty.to_bits())
    };
    let reference = run(BroadPhaseKind::Kdop18);
    assert!(
        f64::from_bits(reference.1) > 0.0,
        "the sheet touches the sphere"
    );
    for kind in [
        BroadPhaseKind::Aabb,
        BroadPhaseKind::SweptBoxes,
        BroadPhaseKind::Grid,
    ] {
        assert!(reference == run(kind), "{kind:?} changed the trajectory");
    }
}

#[test]
fn sheet_on_nails_never_intersects() {
    // The profile's sheet starts 0.5 cm above the tips; here it starts 0.2 above, falling at
    // 20 cm/s, so it reaches the tips early in a short run. Every frame is checked exactly.
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join("sheet_on_nails.toml");
    let args = [
        "run",
        profile.to_str().unwrap(),
        "--set",
        "object.sheet.translate=[0.0, 10.2, 0.0]",
        "--set",
        "object.sheet.velocity=[0.0, -20.0, 0.0]",
        "--set",
        "scene.frame_interval=0.002",
        "--until",
        "0.016",
        "--out",
        "f",
    ];
    let out = acm(dir.path(), &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("f/stats.json")).unwrap())
            .unwrap();
    assert!(
        stats["contact"]["deepest_layer"].as_u64().unwrap() >= 1,
        "the sheet reached the nails"
    );
    let out = acm(dir.path(), &["check", "f"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn unknown_broad_phase_is_rejected_naming_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(profiles_dir().join("particle_floor.toml")).unwrap();
    let text = text.replace("[contact]\n", "[contact]\nbroad_phase = \"octree\"\n");
    std::fs::write(dir.path().join("p.toml"), &text).unwrap();
    let line = text
        .lines()
        .position(|l| l.starts_with("broad_phase"))
        .unwrap()
        + 1;
    let out = acm(dir.path(), &["run", "p.toml", "--out", "o"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for needle in [format!("p.toml:{line}"), "octree".into(), "kdop18".into()] {
        assert!(stderr.contains(&needle), "{needle:?} not in {stderr}");
    }
}

#[test]
fn broad_phase_names_round_trip() {
    for (kind, name) in BroadPhaseKind::ALL.iter().zip(BroadPhaseKind::NAMES) {
        assert_eq!(kind.name(), name);
        assert_eq!(BroadPhaseKind::parse(name), Some(*kind));
    }
    assert_eq!(BroadPhaseKind::default(), BroadPhaseKind::Kdop18);
    assert_eq!(BroadPhaseKind::parse("octree"), None);
}

/// The broad phase's reference slack (cm) and leaf refits so far.
fn slack_and_refits(sim: &Simulation) -> (f64, u64) {
    let contact = sim.stats().contact.clone().unwrap();
    let list = contact.broad_phase.list.as_ref().unwrap();
    (contact.broad_phase.slack, list.leaf_refits)
}

#[test]
fn a_sheet_resting_on_the_sphere_widens_the_slack_and_keeps_its_trajectory() {
    // Kicked in its layers every few ticks, the resting sheet keeps straying from its
    // references: the kinetic list widens its slack (from eta1 / 4 to eta1, the edges being
    // about 2.5 long), and only when it looks changes, not what happens.
    let overrides = ["object.sheet.translate=[0.0, 20.3, 0.0]".to_string()];
    let scene = profile::load(&profiles_dir().join("sheet_on_sphere.toml"), &overrides).unwrap();
    let until = 0.25;
    let kdop = run_audited(scene.clone(), BroadPhaseKind::Kdop18, until);
    let eta1 = scene.contact.eta1;
    assert_eq!(slack_and_refits(&kdop).0, eta1);
    let mut swept_scene = scene;
    swept_scene.contact.broad_phase = BroadPhaseKind::SweptBoxes;
    let mut swept = Simulation::new(&swept_scene).unwrap();
    swept.run_until(until, &mut NoFrames).unwrap();
    let positions = |sim: &Simulation| {
        let mut x = Vec::new();
        sim.model().positions_at(until, &mut x);
        x
    };
    assert!(positions(&kdop) == positions(&swept));
}

#[test]
fn a_falling_sheet_keeps_the_narrow_slack() {
    // Gravity bends every path off its reference, so leaves are refitted, but with no pair in
    // a layer a shorter horizon is what follows them: the slack stays eta1 / 4.
    let overrides = ["object.sheet.translate=[0.0, 80.0, 0.0]".to_string()];
    let scene = profile::load(&profiles_dir().join("sheet_on_sphere.toml"), &overrides).unwrap();
    let mut sim = Simulation::new(&scene).unwrap();
    sim.run_until(0.08, &mut NoFrames).unwrap();
    let (slack, refits) = slack_and_refits(&sim);
    assert!(refits > 0);
    assert_eq!(slack, 0.25 * scene.contact.eta1);
}
