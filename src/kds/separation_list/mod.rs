//! The kinetic separation list (thesis §5.3 after Weller and Zachmann 2006; DESIGN §6): the
//! frontier of a self-traversal of one [`Bvh`](crate::kds::bvh::Bvh), maintained by certificates.
//!
//! **Pairs.** A node pair is either *apart* (a frontier pair: its volumes do not overlap now) or
//! *open* (they overlap, and the traversal continues below it: its child pairs exist). The
//! root's self pair is always open. An open internal pair `(A, B)` has the child pairs
//! `(A_i, B_j)` (for a self pair `(A, A)`: `(A_l, A_l)`, `(A_r, A_r)`, `(A_l, A_r)`, leaving out
//! self pairs of leaves); an open leaf pair has handed its feature pairs to the separation slabs
//! ([`Leaves::features`](crate::kds::leaves::Leaves::features)).
//!
//! **Certificates.** Each pair has one event, the earlier of its two failures:
//! - an apart pair starts to overlap: it opens (descends), recursively while children overlap;
//! - an open pair stops overlapping: it collapses (its subtree is freed, open leaf pairs below it
//!   take their feature pairs back) and becomes an apart pair again. This is the "parents stop
//!   overlapping" certificate of the thesis, held by the parent itself. The *lazy* variant
//!   (`eager = false`) skips it and collapses only at horizon rebuilds, as the thesis's lazy
//!   hand-back did; `ListStats::pair_seconds` measures what that costs.
//!
//! The descents are serial; the leaf pairs they open hand their feature pairs over together
//! once the certificates due are processed, in parallel, passed on in the order they opened.
//!
//! **Horizon.** Volumes are valid on `[now, t_end]` and no certificate is computed past `t_end`:
//! the engine rebuilds the horizon there. With the short-circuit of thesis §8.1
//! (`speed.short_circuit`, [`SeparationList::short_circuit`]) no certificate is computed past
//! the engine's next all-vertex event either; the pairs cut short there are re-timed at that
//! event.
//!
//! **Contingency.** A kick that keeps a vertex near its reference trajectory costs one distance
//! test ([`References::follows`](crate::kds::leaves::References::follows)). A vertex that
//! strays refits its leaves and the ancestors whose volumes no longer contain them
//! ([`Bvh::place_bucket`](crate::kds::bvh::Bvh::place_bucket)); each node keeps an intrusive
//! list of the pairs it is in, so only the pairs of the changed nodes are re-timed.
//!
//! The list is made of one part per concern, each in its own file: [`hierarchy`] (the leaves,
//! their references and the hierarchy over them), [`node_pairs`] (the pair tree, a structure of
//! arrays indexed by pair id with a free list), [`certificates`] (the pairs' certificates in
//! the list's own event queue, keyed by pair id, so ties pop in id order and a run is
//! deterministic), [`walk`] (what a failing certificate does to the tree), [`hand_over`] (the
//! feature pairs handed to and taken back from the slabs), [`strays`] (the refits after kicks)
//! and [`audit`].

mod audit;
mod certificates;
mod hand_over;
mod hierarchy;
mod list;
mod node_pairs;
mod strays;
mod walk;

pub(crate) use list::ListStats;
pub(crate) use list::SeparationList;
