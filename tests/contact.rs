//! Contact: penalty layers, slabs and the safety guarantee, each scene audited after every event
//! (`set_audit`) and its frames checked by the exact intersection audit.

mod common;

use std::path::Path;

use acm::check::{measure, AuditReport, Conservation};
use acm::mesh;
use acm::prelude::{FrameSource, Stepper};
use acm::scene::{profile, Material, Scene, SceneObject};
use acm::{Frame, FrameSink, NoFrames, RunError, Simulation, WaitPolicy};
use common::{acm, head_on, momentum, momentum_scale, profiles_dir, Audited};
use glam::DVec3;

/// Runs `sim` to `until` with the per-event audit on and every frame audited exactly.
fn run_audited(sim: &mut Simulation, until: f64) -> AuditReport {
    sim.set_audit(true);
    let mut sink = Audited(AuditReport::default());
    sim.run_until(until, &mut sink)
        .expect("the run passes the audit");
    assert!(sink.0.frames > 0);
    assert_eq!(sink.0.intersecting_pairs, 0, "{:?}", sink.0.first_bad);
    sink.0
}

fn floor_scene(particle_height: f64, velocity: DVec3) -> Scene {
    let floor = SceneObject {
        name: "floor".into(),
        mesh: mesh::sheet(2, 2, 10.0, 10.0).unwrap(),
        material: Material::default(),
        fixed: true,
        velocity: DVec3::ZERO,
        particle_mass: None,
    };
    let mut particle =
        SceneObject::particle("particle", DVec3::new(0.3, particle_height, 0.2), 0.01);
    particle.velocity = velocity;
    let mut scene = Scene {
        name: "particle".into(),
        objects: vec![floor, particle],
        ..Scene::default()
    };
    scene.contact.enabled = true;
    scene
}

#[test]
fn walkthrough_particle_rests_where_layer_one_balances_gravity() {
    let scene = profile::load(&profiles_dir().join("particle_floor.toml"), &[]).unwrap();
    let mut sim = Simulation::new(&scene).unwrap();
    run_audited(&mut sim, 1.0);
    // Time-average the height over the second half of the run.
    let (mut sum, mut n) = (0.0, 0);
    let particle = sim.model().objects()[1].first_vertex as usize;
    for k in 1..=2000 {
        let t = 1.0 + k as f64 * 5e-4;
        sim.run_until(t, &mut NoFrames).unwrap();
        sum += sim.model().state().position_at(particle, t).y;
        n += 1;
    }
    let rest = sum / n as f64;
    eprintln!("walkthrough: rest height {rest}");
    let expected = scene.contact.eta1 - 0.01 * 981.0 / scene.contact.r1;
    assert!(
        (rest - expected).abs() < 0.01 * expected,
        "rest height {rest}, expected {expected}"
    );
    let contact = sim.stats().contact.clone().unwrap();
    assert!(contact.deepest_layer >= 1);
    assert!(contact.min_distance > 0.0);
}

#[test]
fn thrown_particle_never_penetrates_and_goes_deeper_when_faster() {
    let mut deepest = Vec::new();
    for speed in [10.0, 1e3, 1e5] {
        let mut scene = floor_scene(1.0, DVec3::new(0.0, -speed, 0.0));
        scene.gravity = DVec3::ZERO;
        scene.frame_interval = 1.0 / speed;
        let mut sim = Simulation::new(&scene).unwrap();
        let particle = sim.model().objects()[1].first_vertex as usize;
        // Long enough to reach the floor and bounce off.
        let end = 3.0 / speed;
        let mut lowest = f64::INFINITY;
        sim.set_audit(true);
        for k in 1..=300 {
            let t = end * k as f64 / 300.0;
            sim.run_until(t, &mut NoFrames).unwrap();
            lowest = lowest.min(sim.model().state().position_at(particle, t).y);
        }
        assert!(
            lowest > 0.0,
            "speed {speed}: the particle reached y = {lowest}"
        );
        let contact = sim.stats().contact.clone().unwrap();
        assert!(contact.min_distance > 0.0);
        assert!(
            sim.model().state().v[particle].y > 0.0,
            "speed {speed}: it bounced back"
        );
        deepest.push(contact.deepest_layer);
    }
    eprintln!("deepest layers at 10, 1e3, 1e5 cm/s: {deepest:?}");
    assert!(
        deepest[0] < deepest[1] && deepest[1] < deepest[2],
        "deepest layers {deepest:?} should grow with speed"
    );
}

#[test]
fn sheets_colliding_head_on_conserve_momentum() {
    let scene = head_on();
    let mut sim = Simulation::new(&scene).unwrap();
    let scale = momentum_scale(&sim);
    let before = momentum(&sim);
    run_audited(&mut sim, 0.004);
    let after = momentum(&sim);
    let contact = sim.stats().contact.clone().unwrap();
    assert!(contact.deepest_layer >= 1, "the sheets met");
    let drift = (after - before).length() / scale;
    eprintln!(
        "head-on sheets: momentum drift {drift:e}, deepest layer {}",
        contact.deepest_layer
    );
    assert!(drift < 1e-10, "momentum drifted by {drift:e} (relative)");
    // They collided (COR 0): the layers took out at least 90% of the 1100 cm/s approach.
    let mean_vy = |o: usize| {
        let r = &sim.model().objects()[o];
        let vs = &sim.model().state().v[r.first_vertex as usize..][..r.vertex_count as usize];
        vs.iter().map(|v| v.y).sum::<f64>() / vs.len() as f64
    };
    assert!(
        mean_vy(1) - mean_vy(0) < 110.0,
        "still approaching at {} cm/s",
        mean_vy(1) - mean_vy(0)
    );
}

#[test]
#[ignore = "long scene run: cargo test --release -- --ignored (.ci/run runs it)"]
fn sheet_on_sphere_stays_clean() {
    // The whole default scene, audited throughout: 1 simulated second, ~1.7 M events.
    let scene = profile::load(&profiles_dir().join("sheet_on_sphere.toml"), &[]).unwrap();
    let mut sim = Simulation::new(&scene).unwrap();
    let report = run_audited(&mut sim, scene.duration);
    assert_eq!(report.frames, 26);
    assert!(report.min_distance > 0.0);
    let contact = sim.stats().contact.clone().unwrap();
    assert!(contact.deepest_layer >= 1, "the sheet touched the sphere");
    // The live counter behind the progress bar agrees with the per-kind counts.
    assert_eq!(sim.work_done(), sim.stats().events_total);
}

/// Audits every frame exactly and records the energies at each.
struct AuditedEnergy {
    audit: Audited,
    energies: Vec<Conservation>,
}

impl FrameSink for AuditedEnergy {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        (self.energies).push(measure(frame.source, frame.time, frame.positions));
        self.audit.frame(frame)
    }
}

/// Runs `sim` to `until`, audited after every event and every frame checked exactly (none may
/// intersect); returns the total energy at each frame.
fn audited_energies(sim: &mut Simulation, until: f64) -> Vec<f64> {
    let records = audited_records(sim, until);
    records.iter().map(|c| c.total).collect()
}

/// [`audited_energies`], with every energy and momentum at each frame.
fn audited_records(sim: &mut Simulation, until: f64) -> Vec<Conservation> {
    sim.set_audit(true);
    let mut sink = AuditedEnergy {
        audit: Audited(AuditReport::default()),
        energies: Vec::new(),
    };
    sim.run_until(until, &mut sink)
        .expect("the run passes the audit");
    assert_eq!(
        sink.audit.0.intersecting_pairs, 0,
        "{:?}",
        sink.audit.0.first_bad
    );
    sink.energies
}

/// Runs `profiles/spring_wall.toml` with `sets` for its full duration, audited after every
/// event and every frame checked exactly; returns its impacts (entries into layer 2: at the
/// default layer clocks layer 1 can stay on between two impacts), its deepest layer, and the
/// mean total energy of the last tenth of the frames minus that of the first tenth, over the
/// initial energy.
fn spring_wall_drift(sets: &[&str]) -> (u64, u32, f64) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scene = profile::load(&profiles_dir().join("spring_wall.toml"), &sets).unwrap();
    let mut sim = Simulation::new(&scene).unwrap();
    let e = &audited_energies(&mut sim, scene.duration);
    let contact = sim.stats().contact.clone().unwrap();
    let tenth = e.len() / 10;
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let drift = (mean(&e[e.len() - tenth..]) - mean(&e[..tenth])) / e[0];
    let impacts = contact.activations_per_layer[1];
    eprintln!(
        "spring_wall {sets:?}: {impacts} impacts, deepest layer {}, drift {:.3}% of the \
         initial energy",
        contact.deepest_layer,
        100.0 * drift
    );
    (impacts, contact.deepest_layer, drift)
}

#[test]
fn spring_wall_energy_oscillates_about_its_initial_value() {
    let (impacts, _, drift) = spring_wall_drift(&[]);
    assert!(impacts >= 1000, "{impacts} impacts");
    assert!(drift.abs() < 0.005, "energy drifted {:.3}%", 100.0 * drift);
}

#[test]
fn spring_wall_keeps_its_energy_at_the_default_settings() {
    // The profile's finer clocks (contact.safety 0.05, integrator.safety 0.02) off one at a
    // time: the default layer clocks, then the default clocks for the springs too.
    for sets in [
        &["contact.safety=0.5"][..],
        &["contact.safety=0.5", "integrator.safety=0.5"],
    ] {
        let (impacts, _, drift) = spring_wall_drift(sets);
        assert!(impacts >= 1000, "{impacts} impacts");
        assert!(drift.abs() < 0.01, "energy drifted {:.3}%", 100.0 * drift);
    }
    // What the springs' share of the closure takes out: without it, each layer impulse
    // between two of a spring's ticks puts the spring out of step with its potential.
    let (_, _, drift) = spring_wall_drift(&["contact.safety=0.5", "contact.closure_forces=false"]);
    assert!(drift < -0.01, "energy drifted {:.3}%", 100.0 * drift);
}

/// Runs `acm run profiles/particle_floor.toml` with `overrides`; returns exit code and stderr.
fn particle_floor_with(overrides: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join("particle_floor.toml");
    let mut args = vec!["run", profile.to_str().unwrap()];
    for o in overrides {
        args.extend(["--set", o]);
    }
    let out = acm(dir.path(), &args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn converging_layer_schedule_is_rejected() {
    let (code, stderr) =
        particle_floor_with(&["contact.eta_exponent=1.0", "contact.r_exponent=0.5"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("converges"), "{stderr}");
}

#[test]
fn the_layer_clock_rule_is_validated_and_both_rules_run() {
    for rule in ["thesis", "stack"] {
        let (code, stderr) = particle_floor_with(&[&format!("contact.clocks={rule}")]);
        assert_eq!(code, Some(0), "{rule}: {stderr}");
    }
    let (code, stderr) = particle_floor_with(&["contact.clocks=sideways"]);
    let named = stderr.contains("contact.clocks") && stderr.contains("`thesis` or `stack`");
    assert!(code == Some(2) && named, "{code:?}: {stderr}");
}

#[test]
fn start_closer_than_eta1_is_rejected_naming_the_pair() {
    let (code, stderr) = particle_floor_with(&["object.particle.translate=[0.3, 0.05, 0.2]"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("closer than contact.eta1"), "{stderr}");
    assert!(stderr.contains("\"particle\""), "{stderr}");
}

#[test]
fn check_command_reports_clean_and_intersecting_frames() {
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join("particle_floor.toml");
    let out = acm(
        dir.path(),
        &[
            "run",
            profile.to_str().unwrap(),
            "--until",
            "0.3",
            "--out",
            "f",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = acm(dir.path(), &["check", "f"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(report["frames"], 16);
    assert_eq!(report["intersecting_pairs"], 0);

    // Two crossing triangles.
    let bad = dir.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(
        bad.join("frame_00000.obj"),
        "o a\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\no b\nv 0.2 0.2 -1\nv 0.2 0.2 1\nv 2 2 0\nf 4 5 6\n",
    )
    .unwrap();
    let out = acm(dir.path(), &["check", "bad"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(report["intersecting_pairs"], 1);
    assert_eq!(report["first_bad"]["triangles"], serde_json::json!([0, 1]));

    let out = acm(dir.path(), &["check", "missing"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn contact_runs_are_bit_identical_on_any_number_of_threads() {
    // Inelastic, partly elastic and elastic (the work closure, with the springs' and
    // gravity's ticks followed).
    for cor in ["0.0", "0.5", "1.0"] {
        let overrides = [
            "object.sheet.translate=[0.0, 20.6, 0.0]".to_string(),
            format!("contact.cor={cor}"),
            "contact.closure_restitution=true".to_string(),
        ];
        runs_are_bit_identical_on_any_number_of_threads(&overrides);
    }
}

/// Runs `sheet_on_sphere` with `overrides` for 0.04 s on 1 to 4 threads, each way of waiting.
fn runs_are_bit_identical_on_any_number_of_threads(overrides: &[String]) {
    let scene = profile::load(&profiles_dir().join("sheet_on_sphere.toml"), overrides).unwrap();
    let run = |threads: usize, wait: WaitPolicy| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut sim = Simulation::new(&scene).unwrap();
            sim.set_wait_policy(wait);
            sim.run_until(0.04, &mut NoFrames).unwrap();
            let mut x = Vec::new();
            sim.model().positions_at(0.04, &mut x);
            // The engine ran on the caller's pool, not on one of its own or the global one.
            assert_eq!(sim.stats().run.threads, threads);
            (x, sim.stats().events)
        })
    };
    let (one, events) = run(1, WaitPolicy::Active);
    assert!(events.contact > 0, "contact happened");
    for threads in [2, 3, 4] {
        for wait in [WaitPolicy::Active, WaitPolicy::Passive] {
            let (many, _) = run(threads, wait);
            assert!(
                one == many,
                "{threads} threads ({wait:?}) changed the positions"
            );
        }
    }
}

/// Runs `acm run PROFILE --out f` in `dir` with a `--set` for each of `sets`; checks that it
/// stops with exit 2 and a message holding every needle.
fn run_exits_2(dir: &Path, profile: &str, sets: &[&str], needles: &[&str]) {
    let mut args = vec!["run", profile, "--out", "f"];
    for set in sets {
        args.extend(["--set", set]);
    }
    let out = acm(dir, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
}

/// Runs `profile` with `--set` overrides into `f/`; checks that the run stops with exit 2 and a
/// message holding every needle, and that the frames it wrote pass `acm check`. Returns the
/// number of frames written.
fn stops_cleanly(profile: &str, sets: &[&str], needles: &[&str]) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join(profile);
    run_exits_2(dir.path(), profile.to_str().unwrap(), sets, needles);
    let out = acm(dir.path(), &["check", "f"]);
    assert_eq!(out.status.code(), Some(0), "the frames written are clean");
    std::fs::read_dir(dir.path().join("f"))
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with("frame_")
        })
        .count()
}

#[test]
fn a_layer_too_stiff_to_advance_time_is_refused_at_load() {
    // r1 = 1e35 gives layer 1 a clock near 1e-19 s: below what f64 can add to t ~ 0.04 s, so
    // the run could never get past the first contact. It is refused before any frame (the run
    // writes into a temporary directory that `particle_floor_with` drops).
    let (code, stderr) = particle_floor_with(&["contact.r1=1e35"]);
    assert_eq!(code, Some(2), "{stderr}");
    for needle in ["contact.r1", "first penalty layer", "use r1 <="] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
}

/// A particle at 10 km/s arriving at the floor at t = 1 s.
const TEN_KM_PER_S: [&str; 3] = [
    "object.particle.velocity=[0, -1e6, 0]",
    "object.particle.translate=[0.3, 1e6, 0.2]",
    "scene.gravity=[0, 0, 0]",
];

#[test]
fn a_pair_faster_than_time_can_resolve_stops_the_run_cleanly() {
    // With exact schedules a slab is looked at when it fails, at d = eta: one rounding of
    // t (2.2e-16 s) moves the particle 2.2e-10 cm, more than a layer's certified margin
    // (1e-9 eta).
    let mut sets = TEN_KM_PER_S.to_vec();
    sets.push("speed.fuzzy_trajectories=false");
    let written = stops_cleanly(
        "particle_floor.toml",
        &sets,
        &[
            "time resolution exhausted",
            "vertex 0 of \"particle\" and triangle",
        ],
    );
    assert_eq!(written, 50, "frames up to t = 0.98 s only");
}

#[test]
fn fuzzy_trajectories_catch_the_pair_exact_schedules_cannot_resolve() {
    // Fuzzy schedules look at a slab before it fails (at 1 - QL of the time left), so the
    // layer activates between 1.1 eta and eta, some 1e-8 s before the crossing: far above
    // the time resolution at t = 1 s.
    let dir = tempfile::tempdir().unwrap();
    let profile = profiles_dir().join("particle_floor.toml");
    let mut args = vec!["run", profile.to_str().unwrap(), "--out", "f"];
    for set in TEN_KM_PER_S {
        args.extend(["--set", set]);
    }
    let out = acm(dir.path(), &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = acm(dir.path(), &["check", "f"]);
    assert_eq!(out.status.code(), Some(0), "the frames are clean");
    // The particle bounced: its last momentum points up.
    let energy = std::fs::read_to_string(dir.path().join("f/energy.csv")).unwrap();
    let last: Vec<f64> = energy
        .lines()
        .last()
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(last[0], 2.0);
    assert!(last[7] > 0.0, "py = {}", last[7]);
}

#[test]
fn scripted_object_driven_into_a_fixed_one_stops_before_intersecting() {
    // The sheet becomes a scripted plate pushed down through the sphere at 100 cm/s.
    let written = stops_cleanly(
        "sheet_on_sphere.toml",
        &["script=[{ object = \"sheet\", select = { all = true }, keys = [{ time = 0.0, velocity = [0, -100, 0] }] }]"],
        &["fixed or scripted primitives reached a penalty layer"],
    );
    assert!(written < 26);
}

#[test]
fn stepping_event_by_event_is_the_same_run() {
    let scene = profile::load(&profiles_dir().join("particle_floor.toml"), &[]).unwrap();
    let mut whole = Simulation::new(&scene).unwrap();
    whole.run_until(0.1, &mut NoFrames).unwrap();
    let mut stepped = Simulation::new(&scene).unwrap();
    let mut kinds = std::collections::HashSet::new();
    while stepped.work_done() < whole.work_done() {
        let event = stepped.step(&mut NoFrames).unwrap().expect("events remain");
        assert!(event.time <= 0.1);
        kinds.insert(format!("{:?}", event.kind));
    }
    assert!(
        kinds.contains("Penalty") && kinds.contains("Certificate"),
        "{kinds:?}"
    );
    let (mut a, mut b) = (Vec::new(), Vec::new());
    whole.model().positions_at(0.1, &mut a);
    stepped.model().positions_at(0.1, &mut b);
    assert_eq!(a, b);
}

/// A particle bouncing between two fixed walls without gravity or damping. At the default
/// `contact.safety` the layer ticks alone (`contact.work_closure = false`) gain energy at
/// every impact (README, known limitations).
const BOUNCING_BETWEEN_WALLS: &str = r#"
[scene]
name = "walls"
duration = 10.0
frame_interval = 0.1
gravity = [0.0, 0.0, 0.0]

[[object]]
name = "low"
mesh = { generator = "sheet", nx = 2, ny = 2, width = 10.0, depth = 10.0 }
fixed = true

[[object]]
name = "high"
mesh = { generator = "sheet", nx = 2, ny = 2, width = 10.0, depth = 10.0 }
translate = [0.0, 10.0, 0.0]
fixed = true

[[object]]
name = "particle"
mesh = { generator = "particle", mass = 0.01 }
translate = [0.3, 5.0, 0.2]
velocity = [0.0, 1000.0, 0.0]

[contact]
eta1 = 0.1
r1 = 1000.0
cor = 1.0
"#;

/// A temp dir holding `walls.toml`: the walls scene with `extra` appended.
fn walls_dir(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let profile = format!("{BOUNCING_BETWEEN_WALLS}{extra}");
    std::fs::write(dir.path().join("walls.toml"), profile).unwrap();
    dir
}

/// Runs the walls scene with `extra` appended, `--set` overrides and without work closure:
/// checks exit 2 within a minute with a message holding every needle, clean frames, and an
/// early stop.
fn walls_stop(extra: &str, sets: &[&str], needles: &[&str]) {
    let dir = walls_dir(extra);
    let sets = [&["contact.work_closure=false"], sets].concat();
    let start = std::time::Instant::now();
    run_exits_2(dir.path(), "walls.toml", &sets, needles);
    assert!(start.elapsed().as_secs() < 60, "{:?}", start.elapsed());
    let check = acm(dir.path(), &["check", "f"]);
    assert_eq!(check.status.code(), Some(0), "the frames written are clean");
    // It stopped early, not at the scene's end.
    assert!(!dir.path().join("f/frame_00100.obj").exists());
}

#[test]
fn energy_that_runs_away_stops_the_run_instead_of_stalling() {
    // At 100 cm/s this run once stalled after about 220 impacts with energy x1e9.
    for speed in ["100", "1000"] {
        let velocity = format!("object.particle.velocity=[0, {speed}, 0]");
        walls_stop(
            "",
            &[&velocity],
            &[
                "energy ran away",
                "vertex 0 of \"particle\" and triangle",
                "more than 10 times",
                "contact.safety",
            ],
        );
    }
}

/// Energy after each pass of the walls scene's midplane (`sets` applied, the start perturbed by
/// `seed`), for `passes` passes, the run audited after every event and its frames checked
/// exactly.
fn walls_energies(sets: &[String], seed: f64, passes: usize) -> Vec<f64> {
    let mut sets = sets.to_vec();
    sets.extend([
        format!("object.particle.translate=[{}, 5.0, 0.2]", 0.3 + 0.1 * seed),
        "scene.duration=1000.0".into(),
    ]);
    let scene = profile::parse(BOUNCING_BETWEEN_WALLS, "walls", &profiles_dir(), &sets).unwrap();
    let mut sim = Simulation::new(&scene).unwrap();
    let p = sim.model().objects()[2].first_vertex as usize;
    // Perturb the speed too, so that the starts meet the layer clocks at different phases.
    let v = sim.model().state().v[p] * (1.0 + 1e-3 * seed);
    sim.set_velocity(p, v).unwrap();
    sim.set_audit(true);
    let mut sink = Audited(AuditReport::default());
    let m = sim.model().state().mass[p];
    let mut energies = Vec::new();
    let mut side = sim.model().state().position_at(p, 0.0).y > 5.0;
    while energies.len() < passes {
        sim.step(&mut sink)
            .expect("the run passes the audit")
            .expect("the run has not ended");
        let now = sim.model().state().position_at(p, sim.time()).y > 5.0;
        if now != side {
            side = now;
            energies.push(0.5 * m * sim.model().state().v[p].length_squared());
        }
    }
    assert!(sink.0.frames > 0);
    assert_eq!(sink.0.intersecting_pairs, 0, "{:?}", sink.0.first_bad);
    energies
}

#[test]
fn a_particle_between_two_walls_keeps_its_energy_over_a_thousand_impacts() {
    // At the default settings the layer ticks alone gained up to 40% an impact and ran away
    // within 220 impacts; work closure takes each pair's net work out when it leaves.
    for speed in [100.0, 1000.0] {
        let velocity = vec![format!("object.particle.velocity=[0, {speed}, 0]")];
        for seed in 0..6 {
            let e = walls_energies(&velocity, f64::from(seed), 1000);
            let tenth = e.len() / 10;
            let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
            let ratio = mean(&e[e.len() - tenth..]) / mean(&e[..tenth]);
            eprintln!("walls at {speed} cm/s, start {seed}: last tenth / first tenth {ratio}");
            assert!(
                (ratio - 1.0).abs() <= 0.01,
                "{speed} cm/s, start {seed}: {ratio}"
            );
        }
    }
}

#[test]
fn partly_elastic_impacts_keep_the_coefficient_of_restitution_with_closure() {
    // With cor = 0.9 the exact biphasic layers return 0.9 of the energy of each impact (a
    // particle between two walls, no other force). At the default layer clocks the ticks
    // alone miss that by up to 60% (100 cm/s) and 160% (1,000 cm/s) an impact.
    for speed in [100.0, 1000.0] {
        for closure in [true, false] {
            let sets = vec![
                format!("object.particle.velocity=[0, {speed}, 0]"),
                "contact.cor=0.9".into(),
                format!("contact.closure_restitution={closure}"),
            ];
            let mut ratios = Vec::new();
            for seed in 0..6 {
                let e = walls_energies(&sets, f64::from(seed), 21);
                ratios.extend(e.windows(2).map(|w| w[1] / w[0]));
            }
            let worst = ratios
                .iter()
                .fold(0.0f64, |m, r| m.max((r / 0.9 - 1.0).abs()));
            eprintln!(
                "cor 0.9 at {speed} cm/s, closure {closure}: {} impacts, worst {:.3}% off",
                ratios.len(),
                100.0 * worst
            );
            if closure {
                assert!(worst < 1e-3, "{speed} cm/s: an impact {worst} off 0.9");
            } else {
                assert!(worst > 0.1, "{speed} cm/s: the ticks alone within {worst}");
            }
        }
    }
}

#[test]
fn elastic_sheets_colliding_head_on_conserve_momentum_with_work_closure() {
    // The closing impulses are equal and opposite along each pair's normal.
    let mut scene = head_on();
    scene.contact.cor = 1.0;
    let mut sim = Simulation::new(&scene).unwrap();
    let scale = momentum_scale(&sim);
    let before = momentum(&sim);
    let mut x = Vec::new();
    sim.model().positions_at(0.0, &mut x);
    let angular_before = measure(&sim, 0.0, &x).angular_momentum;
    run_audited(&mut sim, 0.006);
    let after = momentum(&sim);
    sim.model().positions_at(sim.time(), &mut x);
    let angular_after = measure(&sim, sim.time(), &x).angular_momentum;
    let drift = (after - before).length() / scale;
    let angular_scale: f64 = (0..sim.model().state().len())
        .map(|i| sim.model().state().mass[i] * x[i].length() * sim.model().state().v[i].length())
        .sum();
    let angular_drift = (angular_after - angular_before).length() / angular_scale;
    eprintln!("elastic head-on sheets: momentum drift {drift:e}, angular {angular_drift:e}");
    assert!(drift < 1e-10, "momentum drifted by {drift:e} (relative)");
    assert!(
        angular_drift < 1e-9,
        "angular momentum drifted by {angular_drift:e}"
    );
    let mean_vy = |o: usize| {
        let r = &sim.model().objects()[o];
        let vs = &sim.model().state().v[r.first_vertex as usize..][..r.vertex_count as usize];
        vs.iter().map(|v| v.y).sum::<f64>() / vs.len() as f64
    };
    // Sheet 1 approached sheet 0 at +1100 cm/s.
    let approach = mean_vy(1) - mean_vy(0);
    assert!(approach < 0.0, "they bounced apart: {approach} cm/s");
    let closings = sim.stats().contact.clone().unwrap().object_closings;
    assert!(
        closings >= 1,
        "the sheets parted and their contact was closed on their motion"
    );
}

#[test]
fn without_an_energy_budget_a_runaway_stops_at_the_speed_limit() {
    // A prescribed force (here zero) does work the energy limit does not track, so the scene has
    // none; the speeds still cannot outgrow what contact can resolve.
    let force =
        "\n[[force]]\nobject = \"particle\"\nselect = { all = true }\nforce = [0.0, 0.0, 0.0]\n";
    walls_stop(
        force,
        &[],
        &[
            "speeds ran away",
            "vertex 0 of \"particle\"",
            "contact.safety",
        ],
    );
}

#[test]
fn a_force_faster_than_contact_can_resolve_stops_the_run_under_both_schedulers() {
    // Gravity of 1e14 cm/s^2, or a prescribed force as strong, gives the particle 1e11
    // cm/s in one tick, where contact resolves about 9e5 cm/s: it once passed through the low
    // wall unseen, and the run ended with exit 0 and frames that `acm check` passed.
    let force = "\n[[force]]\nobject = \"particle\"\nselect = { all = true }\nforce = [0.0, \
                 -1e12, 0.0]\n";
    let stops = |extra: &str, sets: &[&str], needles: &[&str]| {
        let dir = walls_dir(extra);
        run_exits_2(dir.path(), "walls.toml", sets, needles);
        // It stopped at its first tick, before a frame after the start.
        assert!(!dir.path().join("f/frame_00001.obj").exists());
    };
    for scheduler in ["contact.scheduler=kds", "contact.scheduler=speculative"] {
        stops(
            "",
            &[scheduler, "scene.gravity=[0, -1e14, 0]"],
            &[
                "too fast at t = 0 s",
                "gravity sped vertex 0 of \"particle\"",
                "contact.eta1",
            ],
        );
        stops(
            force,
            &[scheduler],
            &[
                "too fast",
                "a prescribed force sped vertex 0 of \"particle\"",
            ],
        );
    }
}

/// A stiff hollow ball (the projectile material of the thesis) dropped at 800 cm/s onto the
/// centre of a fixed capped cylinder's lid: a fan of 256 sliver triangles around one vertex.
const BALL_ON_FAN: &str = r#"
[scene]
name = "ball_on_fan"
duration = 0.0025
frame_interval = 0.00025
gravity = [0.0, 0.0, 0.0]

[[object]]
name = "lid"
mesh = { generator = "cylinder", radius = 10.0, height = 5.0, segments = 256, rings = 1, capped = true }
fixed = true

[[object]]
name = "ball"
mesh = { generator = "icosphere", radius = 1.0, subdivisions = 2 }
translate = [0.0, 6.5, 0.0]
velocity = [0.0, -800.0, 0.0]

[object.material]
density = 0.016
stretch = 50000.0
stretch_damping = 1.0
bend = 100000.0

[contact]
eta1 = 0.05
r1 = 1000.0
cor = 0.0
"#;

#[test]
#[ignore = "long scene run: cargo test --release -- --ignored (.ci/run runs it)"]
fn a_ball_on_a_fan_of_triangles_is_pushed_once_per_contact_point() {
    // Every triangle of the fan holds the vertex under the ball: pushed by each, the ball
    // left at eleven times its impact speed with 2,750 times the energy.
    for (super_events, cor) in [("true", 0.0), ("false", 0.0), ("true", 1.0), ("false", 1.0)] {
        let sets = vec![
            format!("speed.layer_super_events={super_events}"),
            format!("contact.cor={cor}"),
        ];
        let scene = profile::parse(BALL_ON_FAN, "ball_on_fan", &profiles_dir(), &sets).unwrap();
        let mut sim = Simulation::new(&scene).unwrap();
        let ball = sim.model().objects()[1].clone();
        let vertices = ball.first_vertex as usize..(ball.first_vertex + ball.vertex_count) as usize;
        let speed = |sim: &Simulation| {
            let state = sim.model().state();
            let mass: f64 = vertices.clone().map(|i| state.mass[i]).sum();
            let p: DVec3 = vertices.clone().map(|i| state.mass[i] * state.v[i]).sum();
            p.y / mass
        };
        let impact = speed(&sim);
        let total = audited_energies(&mut sim, scene.duration);
        let rebound = speed(&sim);
        let peak = total.iter().copied().fold(f64::MIN, f64::max);
        eprintln!(
            "ball on fan, super-events {super_events}, cor {cor}: impact {impact:.1} cm/s, \
             rebound {rebound:.1} cm/s, peak energy {:.4} of the initial",
            peak / total[0]
        );
        assert!(rebound > 0.0, "the ball bounced: {rebound}");
        assert!(
            rebound <= -impact,
            "rebound {rebound} cm/s, impact {impact} cm/s"
        );
        let last = *total.last().unwrap();
        assert!(last <= total[0], "{last} > {}", total[0]);
        // The lowest vertex comes to rest 3.5e-10 cm off the fan's centre, where a dozen VT
        // pairs each took their spoke for the closest point and acted (1.13 of the initial
        // energy with per-pair events and cor = 0, 1.20 with cor = 1) until the owners' tie
        // covered that rounding. With cor = 1 the ball's stretch damping leaves 0.85 of the
        // energy by the end; undamped, it gains 18% (README, known limitations).
        let bound = if cor == 0.0 { 1.01 } else { 1.02 };
        assert!(peak <= bound * total[0], "{peak} > {bound} x {}", total[0]);
    }
}

#[test]
fn an_undamped_ball_leaves_the_fan_with_its_energy_once_the_objects_close_their_work() {
    // Pressed down by the whole ball, the lowest vertices sit deep in the layers for hundreds
    // of ticks, whose error is more than those vertices carry when they leave: the pairs'
    // own closing impulses cannot take it out. The springs tick at `integrator.safety = 0.1`
    // here, so that their own error after the impact (about 2% in 6 ms at the default) does
    // not hide the contact's.
    let mean_after = |closure_objects: bool| {
        let sets: Vec<String> = [
            "contact.cor=1",
            "object.ball.material.stretch_damping=0",
            "integrator.safety=0.1",
            "scene.duration=0.004",
            "scene.frame_interval=0.00002",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("contact.closure_objects={closure_objects}")])
        .collect();
        let scene = profile::parse(BALL_ON_FAN, "ball_on_fan", &profiles_dir(), &sets).unwrap();
        let mut sim = Simulation::new(&scene).unwrap();
        let total = audited_energies(&mut sim, scene.duration);
        let stats = sim.stats().contact.clone().unwrap();
        // The ball has left the lid by 2.5 ms (frames every 20 us from 0).
        let after = &total[125..];
        let mean = after.iter().sum::<f64>() / after.len() as f64;
        (mean / total[0], stats.object_closings)
    };
    let (with, closings) = mean_after(true);
    let (without, none) = mean_after(false);
    eprintln!("undamped ball on the fan, mean energy after the impact: {with:.4} of the initial, {without:.4} without the closure across objects");
    assert_eq!((closings, none), (1, 0), "one contact, closed once");
    // The control: without it the ball keeps a gain (1.08 of the initial energy).
    assert!(without > 1.05, "the pairs alone leave the gain: {without}");
    assert!((with - 1.0).abs() < 0.005, "{with} of the initial energy");
}

#[test]
fn an_undamped_ball_between_two_plates_keeps_its_energy_from_impact_to_impact() {
    // The undamped ball of the fan test above, bouncing between two fixed plates with no
    // gravity every few milliseconds; its springs tick at `integrator.safety = 0.1`, as there.
    // With the pairs' closure alone the energy between impacts climbed to 1.18, 1.42, 1.90,
    // 2.16, 2.38 and 2.49 times the initial within these 50 ms.
    let sets: Vec<String> = [
        "contact.cor=1",
        "object.ball.material.stretch_damping=0",
        "integrator.safety=0.1",
        "scene.duration=0.05",
        "scene.frame_interval=0.0001",
    ]
    .map(String::from)
    .into();
    let mut scene = profile::parse(BALL_ON_FAN, "ball_on_fan", &profiles_dir(), &sets).unwrap();
    // The walls of `BOUNCING_BETWEEN_WALLS`, brought to 6 cm apart, for the fan; the ball at
    // their middle.
    let walls = profile::parse(BOUNCING_BETWEEN_WALLS, "walls", &profiles_dir(), &[]).unwrap();
    scene
        .objects
        .splice(..1, walls.objects[..2].iter().cloned());
    let [_, ceiling, ball] = &mut scene.objects[..] else {
        unreachable!("two walls and the ball")
    };
    ceiling.mesh.positions.iter_mut().for_each(|x| x.y = 6.0);
    ball.mesh.positions.iter_mut().for_each(|x| x.y -= 3.5);
    let mut sim = Simulation::new(&scene).unwrap();
    let records = audited_records(&mut sim, scene.duration);
    let initial = records[0].total;
    // The frames between two impacts: no layer holds energy.
    let flights: Vec<Vec<f64>> = (records
        .chunk_by(|a, b| (a.penalty == 0.0) == (b.penalty == 0.0)))
    .filter(|run| run[0].penalty == 0.0 && run.len() >= 5)
    .map(|run| run.iter().map(|c| c.total / initial).collect())
    .collect();
    let means: Vec<f64> = (flights.iter())
        .map(|f| f.iter().sum::<f64>() / f.len() as f64)
        .collect();
    let closings = sim.stats().contact.clone().unwrap().object_closings;
    eprintln!(
        "ball between plates: {closings} contacts closed, mean energy of each flight {means:.4?}"
    );
    assert!(
        closings >= 5 && means.len() >= 6,
        "{closings} contacts, {} flights",
        means.len()
    );
    // Measured: 1.0000, 1.0006, 1.0010, 1.0017, 0.9816, 0.9831. At the fourth impact the
    // ball's top vertex alone took the ceiling through many layers, and its ticks' net work
    // (+2% of the energy, taken out) was met by about as much lost in the springs' ticks,
    // which the closure's estimate of the other forces' error (`contact.closure_forces`)
    // missed; on other starts every flight is within 0.25% (`benches/README.md`).
    for (k, mean) in means.iter().enumerate() {
        assert!((mean - 1.0).abs() < 0.03, "flight {k}: {mean}");
    }
}

#[test]
fn a_particle_sliding_over_the_diagonal_of_a_flat_floor_gets_no_sideways_push() {
    // The floor's two triangles share the diagonal x = z; the particle falls into layer 1 and
    // slides along +x on it (held up against gravity), crossing the diagonal. Within eta1 of
    // the diagonal, the neighbouring triangle's closest point is on the diagonal: pushed from
    // there, the particle would gain velocity along z.
    let mut scene = floor_scene(0.12, DVec3::new(50.0, 0.0, 0.0));
    scene.objects[1].mesh.positions[0] = DVec3::new(-2.0, 0.12, 0.3);
    scene.duration = 0.1;
    scene.frame_interval = 0.01;
    let mut sim = Simulation::new(&scene).unwrap();
    run_audited(&mut sim, scene.duration);
    let particle = sim.model().objects()[1].first_vertex as usize;
    let x = sim.model().state().position_at(particle, scene.duration);
    assert!(x.x > 1.0, "it crossed the diagonal: {x:?}");
    let v = sim.model().state().v[particle];
    // No friction: only round-off may move it sideways.
    assert!(v.z.abs() <= 1e-9 * v.length(), "sideways {v:?}");
}

/// Two identical 21 x 21 sheets, vertex over vertex, the free one dropped at 100 cm/s onto the
/// pinned one 0.101 cm below: their edges are parallel end to end, where the closest points of
/// two segments are ill-conditioned.
const THIN_GAP: &str = r#"
[scene]
name = "thin_gap"
duration = 0.0005
frame_interval = 0.00001
[[object]]
name = "bottom"
mesh = { generator = "sheet", nx = 21, ny = 21, width = 10.0, depth = 10.0 }
material = { density = 0.01, stretch = 10000.0, stretch_damping = 0.1, bend = 1.0 }
[[object]]
name = "top"
mesh = { generator = "sheet", nx = 21, ny = 21, width = 10.0, depth = 10.0 }
translate = [0.0, 0.101, 0.0]
velocity = [0.0, -100.0, 0.0]
material = { density = 0.01, stretch = 10000.0, stretch_damping = 0.1, bend = 1.0 }
[[fixed]]
object = "bottom"
select = { box = { min = [-5.1, -1.0, -5.1], max = [-4.9, 1.0, 5.1] } }
[[fixed]]
object = "bottom"
select = { box = { min = [4.9, -1.0, -5.1], max = [5.1, 1.0, 5.1] } }
[contact]
eta1 = 0.1
r1 = 1000.0
cor = 0.0
"#;

#[test]
fn sheets_dropped_vertex_over_vertex_reach_the_end_under_both_schedulers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("thin_gap.toml"), THIN_GAP).unwrap();
    for scheduler in ["kds", "speculative"] {
        let set = format!("contact.scheduler={scheduler}");
        let out = acm(
            dir.path(),
            &["run", "thin_gap.toml", "--out", scheduler, "--set", &set],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{scheduler}: {stderr}");
        let stats: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.path().join(scheduler).join("stats.json")).unwrap(),
        )
        .unwrap();
        assert!(
            stats["simulated_seconds"].as_f64().unwrap() >= 0.0005,
            "{stats}"
        );
        let check = acm(dir.path(), &["check", scheduler]);
        let report: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
        assert_eq!(check.status.code(), Some(0), "{report}");
        assert_eq!(report["frames"], 51, "{scheduler}");
    }
}

/// A fixed floor and a scripted plate lowered at 20 cm/s from 1.105 cm above it to `gap` cm
/// above it, where it stops (contact.eta1 = 0.1).
fn plate_stopping_over_a_floor(gap: f64) -> String {
    format!(
        r#"
[scene]
name = "plate_over_floor"
duration = 0.1
frame_interval = 0.01
gravity = [0.0, 0.0, 0.0]
[[object]]
name = "floor"
mesh = {{ generator = "sheet", nx = 5, ny = 5, width = 10.0, depth = 10.0 }}
fixed = true
[[object]]
name = "plate"
mesh = {{ generator = "sheet", nx = 5, ny = 5, width = 4.0, depth = 4.0 }}
translate = [0.0, {start}, 0.0]
material = {{ density = 0.01, stretch = 1000.0, bend = 1.0 }}
[[script]]
object = "plate"
select = {{ all = true }}
keys = [{{ time = 0.0, velocity = [0.0, -20.0, 0.0] }}, {{ time = 0.05, velocity = [0.0, 0.0, 0.0] }}]
[contact]
eta1 = 0.1
"#,
        start = gap + 1.0
    )
}

#[test]
fn prescribed_motion_is_stopped_only_where_it_reaches_a_layer() {
    let dir = tempfile::tempdir().unwrap();
    for (gap, reaches) in [(0.105, false), (0.095, true)] {
        let file = format!("plate_{gap}.toml");
        std::fs::write(dir.path().join(&file), plate_stopping_over_a_floor(gap)).unwrap();
        for sets in [
            "contact.scheduler=kds",
            "speed.fuzzy_trajectories=false",
            "contact.scheduler=speculative",
        ] {
            let out = acm(dir.path(), &["run", &file, "--out", "f", "--set", sets]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if reaches {
                assert_eq!(out.status.code(), Some(2), "{gap} {sets}: {stderr}");
                assert!(stderr.contains("reached a penalty layer"), "{stderr}");
            } else {
                assert!(out.status.success(), "{gap} {sets}: {stderr}");
            }
            let check = acm(dir.path(), &["check", "f"]);
            assert_eq!(check.status.code(), Some(0), "{gap} {sets}: frames clean");
        }
    }
}
