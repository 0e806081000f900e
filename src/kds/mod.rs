//! Kinetic data structures (thesis §5.3, DESIGN §6).
//!
//! - [`slab`]: kinetic separation slabs, the narrow-phase certificate of a VT or EE pair.
//! - [`swept_boxes`]: the interim broad phase (swept boxes on a hash grid), to be replaced by
//!   the kinetic k-DOP separation list.
//! - [`kdop`]: k-DOPs and spheres moving linearly in time, and their overlap intervals.
//! - [`leaves`]: the leaf primitives, their feature pairs and reference trajectories.
//! - [`bvh`]: one hierarchy over every leaf of every object.
//! - [`separation_list`]: the kinetic separation list over a [`bvh::Bvh`].

pub mod bvh;
pub mod kdop;
pub mod leaves;
pub mod separation_list;
pub mod slab;
pub mod swept_boxes;
