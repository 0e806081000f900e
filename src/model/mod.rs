//! The model: what is simulated, apart from the method that moves it.
//!
//! A [`Model`] holds the objects and their triangles, the vertex state, the elastic element
//! families, gravity, drag, the prescribed forces and the scripted motions, and each force's
//! clock (`Force`). It is built from a [`Scene`](crate::Scene) once (`Model::build`) and
//! owned by whichever method runs it: ACM's event loop ([`crate::Simulation`]), the
//! synchronous velocity filter ([`crate::sync`]) or implicit contact ([`crate::implicit`]).
//! Every method reads and writes the same vertex state through the same kernels, so their
//! results compare on equal terms.

mod build;
mod contents;
mod forces;
mod objects;
mod size;

pub(crate) use build::{finest_clock_allowed, kick_clocks};
pub use contents::Model;
pub(crate) use forces::{Force, ForceTarget};
pub(crate) use objects::ObjectRange;
pub(crate) use objects::{describe_vertices, owner};
pub use size::{ClockRange, Clocks, ModelSize};
