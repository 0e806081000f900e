//! The leaves of the kinetic broad phases and the feature pairs they hand to separation slabs.
//!
//! A leaf is one triangle, or a primitive that belongs to no triangle (a loose edge or a loose
//! vertex, such as a particle). Two leaves whose volumes overlap hand their vertex-triangle and
//! edge-edge pairs sharing no vertex ([`PairKey`](crate::penalty::PairKey)) to the contact subsystem; a pair of buckets
//! (a few neighbouring leaves) hands them over without repeats (`groups`).
//!
//! Leaves bound *reference trajectories* rather than the vertices' current ones (fuzzy
//! trajectories, thesis §8.2): each vertex has a straight reference path over the horizon, and
//! each leaf volume holds its vertices' reference paths grown by `margin + slack`. A velocity
//! change that keeps a vertex within `slack` of its reference path (at the kick and at the
//! horizon's end: the distance between two linear paths is convex in time) leaves every volume
//! valid and costs no broad-phase work; only a vertex that strays gets a new reference path and
//! refits its leaves ([`References`]).

mod groups;
mod references;
mod table;

pub(crate) use groups::MAX_GROUP;
pub(crate) use references::References;
pub(crate) use table::Feature;
pub(crate) use table::{LeafId, Leaves};
