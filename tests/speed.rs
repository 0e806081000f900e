//! The chapter-8 speed switches (issue 6): each keeps every contact scene clean under the
//! per-event audit and the exact intersection audit of every frame, and `[speed]` is parsed and
//! validated like every other profile section.

mod common;

use acm::check::AuditReport;
use acm::scene::{profile, Scene, SpeedSettings};
use acm::{Frame, FrameSink, NoFrames, RunError, Simulation, Stats};
use common::{head_on, momentum, momentum_scale, Audited};
use glam::DVec3;

/// The settings the table of `benches/README.md` measures: none, then each switch turned on in
/// turn (cumulative), ending at all of them.
fn cumulative() -> Vec<SpeedSettings> {
    let mut speed = SpeedSettings::NONE;
    let mut out = vec![speed];
    for name in SpeedSettings::NAMES {
        *speed.flag_mut(name).unwrap() = true;
        out.push(speed);
    }
    out
}

/// Runs `scene` with `speed` to `until`, audited after every event and every frame.
fn run_audited(scene: &Scene, speed: SpeedSettings, until: f64) -> Simulation {
    let mut scene = scene.clone();
    scene.speed = speed;
    let mut sim = Simulation::new(&scene).unwrap();
    sim.set_audit(true);
    let mut sink = Audited(AuditReport::default());
    if let Err(e) = sim.run_until(until, &mut sink) {
        panic!("{speed:?}: {e}");
    }
    assert!(sink.0.frames > 0);
    assert_eq!(
        sink.0.intersecting_pairs, 0,
        "{speed:?}: {:?}",
        sink.0.first_bad
    );
    sim
}

#[test]
fn every_switch_setting_keeps_the_head_on_sheets_apart_and_conserves_momentum() {
    let scene = head_on();
    for speed in cumulative() {
        let start = Simulation::new(&scene).unwrap();
        let (before, scale) = (momentum(&start), momentum_scale(&start));
        let sim = run_audited(&scene, speed, 0.004);
        let contact = sim.stats().contact.clone().unwrap();
        assert!(contact.deepest_layer >= 1, "{speed:?}: the sheets met");
        let drift = (momentum(&sim) - before).length() / scale;
        assert!(drift < 1e-10, "{speed:?}: momentum drifted by {drift:e}");
    }
}

#[test]
fn without_super_elements_every_element_and_vertex_has_its_own_event() {
    let mut scene = head_on();
    scene.gravity = DVec3::new(0.0, -981.0, 0.0);
    let events = |speed: SpeedSettings| {
        let sim = run_audited(&scene, speed, 0.002);
        sim.stats().model.force_events
    };
    let (springs, hinges, vertices) = {
        let sim = Simulation::new(&scene).unwrap();
        (sim.springs().len(), sim.hinges().len(), sim.state().len())
    };
    assert_eq!(
        events(SpeedSettings::ALL),
        3,
        "stretching, bending, gravity"
    );
    assert_eq!(
        events(SpeedSettings::NONE),
        springs + hinges + vertices,
        "one per spring, hinge and vertex"
    );
}

#[test]
fn gravity_per_vertex_gives_the_same_trajectory_as_the_gravity_super_element() {
    // Particles have no elastic elements, so only gravity's grouping changes: a vertex's kick
    // is the same bits either way, and contact only decides when to look.
    let scene = particle_floor(&[
        "object.particle.replicate={ count = [2, 2, 2], spacing = [2.0, 0.5, 2.0], speed = 50.0, seed = 3 }",
    ])
    .unwrap();
    let run = |super_elements: bool| {
        let speed = SpeedSettings {
            super_elements,
            ..SpeedSettings::ALL
        };
        let sim = run_audited(&scene, speed, 0.3);
        assert!(sim.stats().contact.as_ref().unwrap().deepest_layer >= 1);
        let mut x = Vec::new();
        sim.positions_at(0.3, &mut x);
        (x, sim.stats().model.force_events)
    };
    let (grouped, one) = run(true);
    let (per_vertex, many) = run(false);
    assert!(many > one, "per-vertex gravity events");
    assert!(grouped == per_vertex, "the trajectory changed");
}

#[test]
fn layer_events_per_pair_tick_the_same_layers_as_super_events() {
    let scene = head_on();
    let stats = |layer_super_events: bool| {
        let speed = SpeedSettings {
            layer_super_events,
            ..SpeedSettings::ALL
        };
        let sim = run_audited(&scene, speed, 0.004);
        sim.stats().contact.clone().unwrap()
    };
    let (grouped, per_pair) = (stats(true), stats(false));
    // Per pair, each event ticks one pair: events equal pair ticks. Super-events tick many.
    assert_eq!(
        per_pair.penalty_events_per_layer,
        per_pair.penalty_pair_ticks_per_layer
    );
    let sum = |v: &[u64]| v.iter().sum::<u64>();
    let grouped_events = sum(&grouped.penalty_events_per_layer);
    assert!(grouped_events < sum(&grouped.penalty_pair_ticks_per_layer));
    assert!(sum(&per_pair.penalty_events_per_layer) > grouped_events);
}

/// The scene `profiles/particle_floor.toml` loaded with `sets`.
fn particle_floor(sets: &[&str]) -> Result<Scene, profile::ProfileError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    profile::load(&common::profiles_dir().join("particle_floor.toml"), &sets)
}

#[test]
fn a_preset_sets_every_switch_and_a_switch_given_on_its_own_overrides_it() {
    assert_eq!(particle_floor(&[]).unwrap().speed, SpeedSettings::DEFAULT);
    let all = particle_floor(&["speed.preset=all"]).unwrap().speed;
    assert_eq!(all, SpeedSettings::ALL);
    let none = particle_floor(&["speed.preset=none"]).unwrap().speed;
    assert_eq!(none, SpeedSettings::NONE);
    let on = particle_floor(&["speed.short_circuit=true", "speed.parking=false"])
        .unwrap()
        .speed;
    assert!(on.short_circuit && !on.parking && on.axis_ordering);
    let one = particle_floor(&["speed.preset=none", "speed.layer_super_events=true"])
        .unwrap()
        .speed;
    assert_eq!(
        one,
        SpeedSettings {
            layer_super_events: true,
            ..SpeedSettings::NONE
        }
    );
    let off = particle_floor(&["speed.super_elements=false"])
        .unwrap()
        .speed;
    assert!(!off.super_elements && off.layer_super_events);
}

#[test]
fn bad_speed_settings_are_rejected_with_the_field_and_the_choices() {
    let cases: [(&str, &[&str]); 5] = [
        ("speed.preset=fast", &["fast", "`none` or `all`"]),
        (
            "speed.fuzzy=true",
            &["fuzzy", "super_elements", "parking", "short_circuit"],
        ),
        ("speed.super_elements=3", &["expected a boolean"]),
        ("speed.parking=\"yes\"", &["expected a boolean"]),
        (
            "integrator.grouping=\"element\"",
            &["integrator.grouping", "speed.super_elements"],
        ),
    ];
    for (set, needles) in cases {
        let e = particle_floor(&[set]).unwrap_err().to_string();
        assert!(e.contains("particle_floor.toml"), "{set}: {e}");
        for needle in needles {
            assert!(e.contains(needle), "{set}: {needle:?} not in {e}");
        }
    }
}

#[test]
fn a_preset_none_run_is_deterministic() {
    let scene = head_on();
    let run = || {
        let mut scene = scene.clone();
        scene.speed = SpeedSettings::NONE;
        let mut sim = Simulation::new(&scene).unwrap();
        sim.run_until(0.004, &mut NoFrames).unwrap();
        let mut x = Vec::new();
        sim.positions_at(0.004, &mut x);
        x
    };
    assert!(run() == run());
}

/// Every frame's positions, audited for intersections as they come.
struct Recorded {
    audit: Audited,
    frames: Vec<Vec<DVec3>>,
}

impl FrameSink for Recorded {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        self.frames.push(frame.positions.to_vec());
        self.audit.frame(frame)
    }
}

/// Runs the head-on sheets (they meet: penalty layers activate) with switch `name` on and off,
/// every other switch of [`SpeedSettings::ALL`] on, audited after every event, and asserts that
/// every frame is the same bits and free of intersections. Returns the stats of the runs (on,
/// off).
fn assert_bit_identical_frames(name: &str) -> (Stats, Stats) {
    let scene = head_on();
    let run = |on: bool| {
        let mut speed = SpeedSettings::ALL;
        *speed.flag_mut(name).unwrap() = on;
        let mut scene = scene.clone();
        scene.speed = speed;
        let mut sim = Simulation::new(&scene).unwrap();
        sim.set_audit(true);
        let mut sink = Recorded {
            audit: Audited(AuditReport::default()),
            frames: Vec::new(),
        };
        sim.run_until(0.004, &mut sink)
            .unwrap_or_else(|e| panic!("{name} = {on}: {e}"));
        let report = &sink.audit.0;
        assert_eq!(
            report.intersecting_pairs, 0,
            "{name} = {on}: {:?}",
            report.first_bad
        );
        let stats = sim.stats().clone();
        assert!(
            stats.contact.as_ref().unwrap().deepest_layer >= 1,
            "the sheets met"
        );
        (stats, sink.frames)
    };
    let ((on, frames_on), (off, frames_off)) = (run(true), run(false));
    assert_eq!(frames_on.len(), 21, "a frame every 0.2 ms");
    for (k, (a, b)) in frames_on.iter().zip(&frames_off).enumerate() {
        assert!(a == b, "{name}: frame {k} differs");
    }
    (on, off)
}

#[test]
fn axis_ordering_leaves_every_frame_bit_identical() {
    // It changes only how fast the broad phase's tests answer, never an answer.
    assert_bit_identical_frames("axis_ordering");
}

#[test]
fn parking_leaves_every_frame_bit_identical_and_keeps_the_heap_smaller() {
    let (on, off) = assert_bit_identical_frames("parking");
    let parked = |s: &Stats| s.contact.as_ref().unwrap().parked;
    assert!(parked(&on) > 0 && parked(&off) == 0);
    assert!(
        on.queue_mean < off.queue_mean,
        "mean heap size {} with parking, {} without",
        on.queue_mean,
        off.queue_mean
    );
}

#[test]
fn short_circuiting_leaves_every_frame_bit_identical_and_re_times_the_pairs_it_cut() {
    let (on, off) = assert_bit_identical_frames("short_circuit");
    let retimes = |s: &Stats| {
        let contact = s.contact.as_ref().unwrap();
        contact
            .broad_phase
            .list
            .as_ref()
            .unwrap()
            .short_circuit_retimes
    };
    assert!(retimes(&on) > 0 && retimes(&off) == 0);
}
