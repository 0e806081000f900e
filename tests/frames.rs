//! Output never changes the motion: the clocks do not depend on the frame interval, so two runs
//! of one scene that write frames at different intervals pass through the same positions, bit
//! for bit, at the times they both write a frame.

use acm::prelude::Stepper;
use acm::scene::{profile, Scene, SceneObject};
use acm::{Frame, FrameSink, RunError, Simulation};
use glam::DVec3;

mod common;

/// Every frame's time and positions.
struct Frames(Vec<(f64, Vec<DVec3>)>);

impl FrameSink for Frames {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        self.0.push((frame.time, frame.positions.to_vec()));
        Ok(())
    }
}

/// The frames of `scene` run to `until`, written every `interval`.
fn frames(scene: &Scene, interval: f64, until: f64) -> Vec<(f64, Vec<DVec3>)> {
    let scene = Scene {
        frame_interval: interval,
        ..scene.clone()
    };
    let mut sim = Simulation::new(&scene).unwrap();
    let mut frames = Frames(Vec::new());
    sim.run_until(until, &mut frames).expect("the run succeeds");
    frames.0
}

/// Runs `scene` with frames every 1/32 s and every 3/64 s (both exact in binary, so the frames
/// at multiples of 3/32 s fall at the same times) and checks those frames are identical and
/// that the scene moved.
fn same_positions_at_common_frames(scene: &Scene) {
    let until = 3.0 / 16.0;
    let fine = frames(scene, 1.0 / 32.0, until);
    let coarse = frames(scene, 3.0 / 64.0, until);
    let common: Vec<_> = fine
        .iter()
        .filter_map(|(t, x)| Some((t, x, coarse.iter().find(|(u, _)| u == t)?)))
        .collect();
    assert_eq!(common.len(), 3, "frames at 0, 3/32 and 3/16 s");
    for (t, x, (_, y)) in common {
        assert!(x == y, "{}: the frames at t = {t} s differ", scene.name);
    }
    let (first, last) = (&fine[0].1, &fine.last().unwrap().1);
    let moved = first.iter().zip(last).map(|(a, b)| a.distance(*b));
    assert!(
        moved.fold(0.0, f64::max) > 1.0,
        "{}: nothing moved",
        scene.name
    );
}

#[test]
fn a_cloth_passes_through_the_same_positions_whatever_the_frames() {
    let sets = ["object.sheet.mesh.nx=8", "object.sheet.mesh.ny=8"].map(String::from);
    let path = common::profiles_dir().join("pinned_sheet.toml");
    same_positions_at_common_frames(&profile::load(&path, &sets).unwrap());
}

#[test]
fn a_falling_particle_passes_through_the_same_positions_whatever_the_frames() {
    // No elastic element: gravity's clock is the external clock's default.
    let scene = Scene {
        name: "falling_particle".into(),
        objects: vec![SceneObject::particle("p", DVec3::ZERO, 0.01)],
        gravity: DVec3::new(0.0, -981.0, 0.0),
        ..Scene::default()
    };
    same_positions_at_common_frames(&scene);
}
