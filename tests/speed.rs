//! The chapter-8 speed switches (issue 6): each keeps every contact scene clean under the
//! per-event audit and the exact intersection audit of every frame, and `[speed]` is parsed and
//! validated like every other profile section.

mod common;

use acm::check::{measure, AuditReport};
use acm::prelude::{FrameSource, Stepper};
use acm::scene::{profile, ContactScheduler, Method, Scene, SpeedSettings};
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
    run_recorded(scene, speed, until).0
}

/// An audited sink that also keeps every frame's positions.
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

/// [`run_audited`], also returning every frame's positions.
fn run_recorded(scene: &Scene, speed: SpeedSettings, until: f64) -> (Simulation, Vec<Vec<DVec3>>) {
    let mut scene = scene.clone();
    scene.speed = speed;
    let mut sim = Simulation::new(&scene).unwrap();
    sim.set_audit(true);
    let mut sink = Recorded {
        audit: Audited(AuditReport::default()),
        frames: Vec::new(),
    };
    if let Err(e) = sim.run_until(until, &mut sink) {
        panic!("{speed:?}: {e}");
    }
    let report = &sink.audit.0;
    assert!(report.frames > 0);
    assert_eq!(
        report.intersecting_pairs, 0,
        "{speed:?}: {:?}",
        report.first_bad
    );
    (sim, sink.frames)
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
        sim.stats().run.model.force_events
    };
    let size = Simulation::new(&scene).unwrap().stats().run.model;
    let (springs, hinges, vertices) = (size.springs, size.hinges, size.vertices);
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
        sim.model().positions_at(0.3, &mut x);
        (x, sim.stats().run.model.force_events)
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

#[test]
fn per_pair_layer_events_give_the_trajectory_of_super_events_with_restitution_and_friction() {
    // Restitution, friction and work closure read velocities, which the ticks of one instant
    // change: ticked one by one in event-id order, per-pair events moved the sheets differently
    // from super-events (by 1e-4 of the kinetic energy after 0.08 s of `sheet_on_sphere` with
    // cor 0.5 and friction 0.3).
    for scheduler in [ContactScheduler::Kds, ContactScheduler::Speculative] {
        for (cor, friction) in [(0.5, 0.3), (1.0, 0.0), (0.0, 0.5)] {
            let mut scene = head_on();
            (scene.contact.cor, scene.contact.friction) = (cor, friction);
            scene.contact.scheduler = scheduler;
            let run = |layer_super_events: bool| {
                let speed = SpeedSettings {
                    layer_super_events,
                    ..SpeedSettings::DEFAULT
                };
                let (sim, frames) = run_recorded(&scene, speed, 0.006);
                let contact = sim.stats().contact.clone().unwrap();
                (frames, sim.model().state().v.clone(), contact)
            };
            let (grouped, per_pair) = (run(true), run(false));
            let label = format!("{scheduler:?}, cor {cor}, friction {friction}");
            assert!(grouped.0.len() > 1, "{label}");
            assert!(grouped.0 == per_pair.0, "{label}: the frames differ");
            assert!(grouped.1 == per_pair.1, "{label}: the velocities differ");
            let sum = |v: &[u64]| v.iter().sum::<u64>();
            assert_eq!(
                sum(&grouped.2.penalty_pair_ticks_per_layer),
                sum(&per_pair.2.penalty_pair_ticks_per_layer),
                "{label}: the same pair ticks"
            );
            assert!(
                sum(&per_pair.2.penalty_events_per_layer)
                    > sum(&grouped.2.penalty_events_per_layer),
                "{label}: one event per pair"
            );
        }
    }
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
        sim.model().positions_at(0.004, &mut x);
        x
    };
    assert!(run() == run());
}

/// Runs the head-on sheets (they meet: penalty layers activate) with switch `name` on and off
/// over the settings `base`, audited after every event and frame (see [`run_recorded`]), and
/// asserts that every frame is the same bits. Returns the stats of the runs (on, off).
fn assert_bit_identical_frames(name: &str, base: SpeedSettings) -> (Stats, Stats) {
    let scene = head_on();
    let run = |on: bool| {
        let mut speed = base;
        *speed.flag_mut(name).unwrap() = on;
        let (sim, frames) = run_recorded(&scene, speed, 0.004);
        let stats = sim.stats().clone();
        assert!(
            stats.contact.as_ref().unwrap().deepest_layer >= 1,
            "the sheets met"
        );
        (stats, frames)
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
    assert_bit_identical_frames("axis_ordering", SpeedSettings::ALL);
}

#[test]
fn parking_leaves_every_frame_bit_identical_and_keeps_the_heap_smaller() {
    // Parking applies to exact schedules: fuzzy slabs keep their times across all-vertex
    // events, so they must stay queued.
    let exact = SpeedSettings {
        fuzzy_trajectories: false,
        ..SpeedSettings::ALL
    };
    let (on, off) = assert_bit_identical_frames("parking", exact);
    let parked = |s: &Stats| s.contact.as_ref().unwrap().parked;
    assert!(parked(&on) > 0 && parked(&off) == 0);
    let (fuzzy, _) = assert_bit_identical_frames("parking", SpeedSettings::ALL);
    assert_eq!(parked(&fuzzy), 0);
    assert!(
        on.queue_mean < off.queue_mean,
        "mean heap size {} with parking, {} without",
        on.queue_mean,
        off.queue_mean
    );
}

#[test]
fn short_circuiting_leaves_every_frame_bit_identical_and_re_times_the_pairs_it_cut() {
    let (on, off) = assert_bit_identical_frames("short_circuit", SpeedSettings::ALL);
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

#[test]
fn fuzzy_trajectories_leave_every_frame_bit_identical_and_retime_fewer_slabs() {
    // Falling sheets that meet head on: gravity kicks every vertex at every tick, penalty
    // layers kick the contact region. A fuzzy schedule changes only when slabs are looked at.
    let mut scene = head_on();
    scene.gravity = DVec3::new(0.0, -981.0, 0.0);
    let run = |fuzzy_trajectories: bool, quality_loss: f64| {
        let speed = SpeedSettings {
            fuzzy_trajectories,
            quality_loss,
            ..SpeedSettings::ALL
        };
        let (sim, frames) = run_recorded(&scene, speed, 0.004);
        (sim.stats().contact.clone().unwrap(), frames)
    };
    let (exact, exact_frames) = run(false, 0.0);
    assert!(exact.deepest_layer >= 2, "the sheets met");
    assert!(exact_frames.len() >= 20);
    for ql in [0.0, 0.3, 0.7, 0.95] {
        let (fuzzy, frames) = run(true, ql);
        assert!(frames == exact_frames, "QL {ql}: the trajectory changed");
        assert_eq!(fuzzy.reschedules, exact.reschedules, "QL {ql}");
        if ql > 0.0 {
            assert!(
                fuzzy.retimes * 2 < exact.retimes,
                "QL {ql}: {} of {} slabs re-timed",
                fuzzy.retimes,
                exact.retimes
            );
            assert!(
                fuzzy.slab_events > exact.slab_events,
                "QL {ql}: looks earlier"
            );
        }
    }
}

#[test]
fn triangle_pairs_follow_the_feature_pair_trajectory_up_to_rounding() {
    // A feature pair's impulse arrives as k shares from the k triangle pairs containing it, all
    // in the same layer tick: the same forces, summed in another order. Elastic, because
    // triangle pairs keep no history, so no approach damping (`cor < 1`) and no anchor, and
    // without the work closure, which closes feature pairs' episodes one by one.
    let mut scene = head_on();
    scene.contact.cor = 1.0;
    scene.contact.work_closure = false;
    let run = |triangle_pairs: bool| {
        let speed = SpeedSettings {
            triangle_pairs,
            ..SpeedSettings::ALL
        };
        let (sim, frames) = run_recorded(&scene, speed, 0.004);
        let contact = sim.stats().contact.clone().unwrap();
        let energy = measure(&sim, sim.time(), &frames[frames.len() - 1]).total;
        (contact, frames, energy)
    };
    let (features, feature_frames, feature_energy) = run(false);
    let (triangles, triangle_frames, triangle_energy) = run(true);
    assert!(features.deepest_layer >= 2, "the sheets met");
    assert_eq!(features.triangle_pairs, 0);
    assert!(triangles.triangle_pairs > 0);
    let mut worst: f64 = 0.0;
    for (a, b) in feature_frames.iter().zip(&triangle_frames) {
        for (p, q) in a.iter().zip(b) {
            worst = worst.max((*p - *q).length());
        }
    }
    // The sheets are 10 cm wide and travel 4.4 cm towards each other; rounding alone moves
    // a vertex by about 1e-14 cm here (measured: 2.5e-14).
    assert!(
        worst > 0.0 && worst < 1e-11,
        "frames differ by up to {worst:e} cm"
    );
    let drift = (triangle_energy - feature_energy).abs() / feature_energy;
    assert!(drift < 1e-12, "energy differs by {drift:e}");
}

#[test]
fn a_quality_loss_outside_zero_to_one_is_rejected() {
    for bad in ["1.0", "-0.1", "nan", "inf"] {
        let e = particle_floor(&[&format!("speed.quality_loss={bad}")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("speed.quality_loss"), "{bad}: {e}");
        assert!(e.contains("[0, 1)"), "{bad}: {e}");
    }
    let ok = particle_floor(&["speed.quality_loss=0.25"]).unwrap().speed;
    assert_eq!(ok.quality_loss, 0.25);
    assert!(ok.fuzzy_trajectories);
}

#[test]
fn clock_bins_tick_the_compactor_blob_less_often_and_gravity_at_the_median_step() {
    // The lumpy blob's hinge clocks span 17x: one super-element at the smallest clock ticks
    // every hinge 17x too often at worst, power-of-two bins at most 2x.
    let scene = profile::load(&common::profiles_dir().join("bunny_compactor.toml"), &[]).unwrap();
    let build = |clock_bins: bool| {
        let mut scene = scene.clone();
        scene.speed.clock_bins = clock_bins;
        Simulation::new(&scene).unwrap()
    };
    let (binned, single) = (build(true), build(false));
    let ticks_per_second = |sim: &Simulation| {
        let bins = &sim.model().hinges().bins;
        bins.iter()
            .map(|b| b.elements.len() as f64 / b.clock)
            .sum::<f64>()
    };
    assert_eq!(single.model().hinges().bins.len(), 1);
    assert!(binned.model().hinges().bins.len() >= 3);
    let ratio = ticks_per_second(&binned) / ticks_per_second(&single);
    assert!(ratio < 0.5, "hinge ticks per second: {ratio} of unbinned");
    let (clocks, single_clocks) = (&binned.stats().run.clocks, &single.stats().run.clocks);
    assert_eq!(single_clocks.gravity, single_clocks.external);
    // Gravity takes the median vertex's step, here the second bin (twice the smallest clock),
    // as it is: the frame interval plays no part in it.
    let model = binned.model();
    let bin_clocks = (model.springs().bins.iter().map(|b| b.clock))
        .chain(model.hinges().bins.iter().map(|b| b.clock));
    assert!(bin_clocks.into_iter().any(|h| h == clocks.gravity));
    assert!(clocks.gravity > 1.9 * clocks.bending.unwrap().min);
    // Every element ticks at least as often as its own stable clock asks.
    let (springs, hinges, state) = (
        binned.model().springs(),
        binned.model().hinges(),
        binned.model().state(),
    );
    let safety = scene.integrator.safety;
    let spring_shares =
        acm::forces::ElementKernel::inverse_mass_shares(&springs.kernel, &state.inv_mass);
    let hinge_shares =
        acm::forces::ElementKernel::inverse_mass_shares(&hinges.kernel, &state.inv_mass);
    for (bins, clocks) in [
        (
            &springs.bins,
            springs.kernel.stable_clocks(&spring_shares, safety),
        ),
        (
            &hinges.bins,
            hinges.kernel.stable_clocks(&state.x, &hinge_shares, safety),
        ),
    ] {
        for bin in bins {
            assert!(bin.elements.clone().all(|e| bin.clock <= clocks[e]));
        }
    }
    let sim = run_audited(&scene, SpeedSettings::ALL, 0.01);
    assert!(sim.stats().events.bending > sim.stats().events.gravity);
}

#[test]
fn every_shipped_profile_runs_under_every_preset() {
    // Long enough for every force to tick a few times at its clock; the frames at the start
    // and the end are audited exactly.
    const RUN: f64 = 5e-4;
    let mut profiles: Vec<_> = std::fs::read_dir(common::profiles_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    profiles.sort();
    assert!(profiles.len() > 20, "{profiles:?}");
    for path in profiles {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        // The same generator as drape_10k at 10 and 100 times the size.
        if name == "drape_100k" || name == "drape_1m" {
            continue;
        }
        // The profile's own settings, then each preset.
        for preset in ["(the profile's)", "none", "all"] {
            let mut sets = vec!["scene.frame_interval=0.0005".to_string()];
            if !preset.starts_with('(') {
                sets.push(format!("speed.preset={preset}"));
            }
            let scene = profile::load(&path, &sets).unwrap();
            // Rigid-body scenes (`oba_*`) run under OBA: tests/rigid.rs audits them.
            if scene.integrator.method == Method::Oba {
                break;
            }
            let mut sim = Simulation::new(&scene)
                .unwrap_or_else(|e| panic!("{name} under preset {preset}: {e}"));
            let mut audited = Audited(AuditReport::default());
            sim.run_until(RUN, &mut audited)
                .unwrap_or_else(|e| panic!("{name} under preset {preset}: {e}"));
            assert!(sim.time() >= RUN, "{name} under preset {preset}");
            assert_eq!(audited.0.frames, 2, "{name} under preset {preset}");
            assert_eq!(audited.0.intersecting_pairs, 0, "{name} under {preset}");
        }
    }
}
