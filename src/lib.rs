//! # acm: Asynchronous Contact Mechanics
//!
//! Cloth and thin shells integrated with asynchronous variational integrators (AVIs): every
//! force has its own clock, and the simulation is a stream of events processed in time order
//! (Harmon, *Robust, Efficient, and Accurate Contact Algorithms*, 2010, ch. 5).
//!
//! The crate is data oriented: vertices, elements and events live in structure-of-arrays tables
//! indexed by dense `u32` indices (events by `events::EventId`). Data flows one way:
//! `mesh -> state -> forces | penalty | kds -> events -> engine -> output`, with [`scene`] describing what to
//! build and [`check`] only reading.
//!
//! Build a scene in code, run it, read the positions:
//!
//! ```
//! use acm::prelude::*;
//!
//! let sheet = acm::mesh::sheet(12, 12, 40.0, 40.0)?;
//! let scene = Scene::builder("hanging sheet")
//!     .object(SceneObject::new("sheet", sheet).translated(DVec3::new(0.0, 50.0, 0.0)))
//!     .pin(0, [0, 11]) // two corners held where they are
//!     .build()?;
//! let mut sim = Simulation::new(&scene)?;
//! sim.run_until(0.1, &mut NoFrames)?;
//! let mut positions = Vec::new();
//! sim.model().positions_at(sim.time(), &mut positions);
//! assert_eq!(positions[0].y, 50.0); // pinned
//! assert!(positions[143].y < 50.0); // the far corner falls
//! # Ok::<(), acm::Error>(())
//! ```
//!
//! Profiles (`profiles/*.toml`, [`scene::profile::load`]) describe the same scenes in files,
//! and [`driver`] runs a scene with whichever method it names.
//!
//! Features: `cli` (the `acm` application, with its charts, viewer page and pictures) is on by
//! default; `cargo build --no-default-features --lib` builds the engine alone. `profile-tracy`
//! opens Tracy spans for the loop's phases ([`profiling`]); `bench-kernels` compiles the
//! criterion benchmarks of the crate-private kernels (`kernel_benches`).
#![deny(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod check;
pub mod compare;
mod driver;
pub mod engine;
mod error;
pub mod events;
pub mod forces;
pub mod implicit;
pub mod kds;
#[cfg(feature = "bench-kernels")]
pub mod kernel_benches;
pub mod mesh;
pub mod model;
pub mod output;
pub mod penalty;
pub mod prelude;
pub mod profiling;
pub mod rigid;
mod run_stats;
pub mod scene;
pub mod state;
mod stepper;
pub mod sync;
mod team;
#[cfg(test)]
mod test_rng;
pub mod threads;
mod typed_index;

pub use driver::driver;
pub use engine::{Processed, Simulation, Stats, WaitPolicy};
pub use error::{Error, RunError, SteerError};
/// The vector library of the public API (`DVec3` positions and velocities), re-exported so an
/// embedding program uses the same version.
pub use glam;
pub use model::Model;
pub(crate) use run_stats::RunStats;
pub use scene::Scene;
pub use stepper::{Frame, FrameSink, FrameSource, NoFrames, PenaltyNow, Stepper};

/// The built-in default scene: the profile `profiles/sheet_on_sphere.toml` (a sheet draping
/// over a sphere, with contact), compiled in so that `acm run` works from any directory.
pub const DEFAULT_PROFILE: &str = include_str!("../profiles/sheet_on_sphere.toml");
