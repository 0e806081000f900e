//! Rigid bodies and optimization-based animation (OBA: Schmidl 2002, Milenkovic and Schmidl
//! 2001): convex rigid bodies take one step per frame, and every collision and resting contact
//! inside the step is resolved at its end by quadratic programs (`docs/rigid.md`).
//!
//! [`ObaSimulation`] is the driver (`simulation.rs`); a step (`step.rs`) is the position update
//! (`position`: iterated QPs over separating planes), the contacts (`geometry`), and the
//! momentum and static-contact updates (`impulses`), all QPs solved by `qp`. Bodies
//! (`body`, `shape`) come from `[[body]]` entries, described in
//! [`scene::rigid`](crate::scene::rigid) (convex hulls by `mesh::hull`); under
//! ACM, the synchronous baseline and implicit contact each runs as its surface, a stiff
//! closed shell (`shells`).

pub(crate) mod body;
pub(crate) mod broad;
pub(crate) mod geometry;
pub(crate) mod impulses;
pub(crate) mod position;
pub(crate) mod qp;
pub(crate) mod shape;
pub(crate) mod shells;
mod simulation;
mod stats;
mod step;
mod world;

pub(crate) use crate::scene::rigid::ObaSettings;
pub use simulation::ObaSimulation;
pub(crate) use world::World;
