//! The leaf hand-over of a separation list: the feature pairs that open leaf pairs hand to the
//! separation slabs, and take back (see the parent module's docs).
//!
//! A leaf pair that opens hands over the feature pairs of its two buckets that may come within
//! `eta1` before the horizon's end; the pairs opened by one batch of certificates are noted
//! and handed over together, in parallel, passed on in the order they opened. A leaf pair that
//! collapses takes all of its feature pairs back; they wait here until the engine asks.

use rayon::prelude::*;

use super::hierarchy::Hierarchy;
use super::node_pairs::{NodePairId, NodePairs};
use super::strays::Strays;
use crate::kds::bvh::NodeId;
use crate::kds::kdop::Volume;
use crate::penalty::PairKey;
use crate::profiling::zone;

/// Leaf pairs (or refitted buckets) per rayon task when feature pairs are handed over: each
/// tests every feature pair under its open leaf pairs, 5 us or more on the paper's scenes
/// (170 us on average for a refitted bucket on the reef knot), far above what a fork costs
/// while the pool's workers are awake ([`crate::team`]).
const HAND_OVER_TASK: usize = 2;

/// The leaf pairs waiting to hand over and the feature pairs taken back (see the module docs).
#[derive(Debug, Default)]
pub(super) struct HandOver {
    /// Leaf pairs opened by descents and not handed over yet.
    opened: Vec<NodePairId>,
    /// Feature pairs taken back since the engine last asked.
    lost: Vec<PairKey>,
}

impl HandOver {
    /// Notes that leaf pair `p` opened.
    pub(super) fn opened(&mut self, p: NodePairId) {
        self.opened.push(p);
    }

    /// Whether no opened leaf pair waits to hand over.
    pub(super) fn none_opened(&self) -> bool {
        self.opened.is_empty()
    }

    /// Where the feature pairs of a collapsing leaf pair go.
    pub(super) fn taking_back(&mut self) -> impl FnMut(PairKey) + '_ {
        |k| self.lost.push(k)
    }

    /// Whether feature pairs taken back wait for the engine.
    pub(super) fn has_lost(&self) -> bool {
        !self.lost.is_empty()
    }

    /// Passes the feature pairs taken back on to `lost`.
    pub(super) fn give_back(&mut self, lost: &mut impl FnMut(PairKey)) {
        for k in self.lost.drain(..) {
            lost(k);
        }
    }

    /// Forgets the feature pairs taken back (the pairs they came from are gone).
    pub(super) fn clear_lost(&mut self) {
        self.lost.clear();
    }

    /// Hands over the leaf pairs opened since the last call, in parallel, passing the feature
    /// pairs on to `found` in the order the pairs opened.
    pub(super) fn hand_over_opened<V: Volume>(
        &mut self,
        hierarchy: &Hierarchy<V>,
        pairs: &NodePairs,
        span: (f64, f64),
        found: &mut impl FnMut(PairKey),
    ) {
        let mut opened = std::mem::take(&mut self.opened);
        // Still open: an ancestor overlaps whenever it does, so none collapsed it.
        opened.retain(|&p| pairs.is_open(p));
        Self::hand_over(hierarchy, pairs, span, &opened, found);
        opened.clear();
        self.opened = opened;
    }

    /// Hands over every feature pair of the open leaf pairs `open` that may come within `eta1`
    /// over `span`, in parallel, passing them on to `found` in the order of `open`.
    pub(super) fn hand_over<V: Volume>(
        hierarchy: &Hierarchy<V>,
        pairs: &NodePairs,
        span: (f64, f64),
        open: &[NodePairId],
        found: &mut impl FnMut(PairKey),
    ) {
        in_order(
            open,
            |&p, mut out| {
                let (a, b) = pairs.nodes(p);
                hierarchy.near_node_features(a, b, span, |_| true, &mut out);
            },
            found,
        );
    }

    /// Hands over again, for each of the `buckets` refitted in this update, the near feature
    /// pairs of every open pair of the bucket that involve a vertex whose reference changed in
    /// it: the others' answer cannot have changed. A pair of two refitted buckets is looked at
    /// once, from the larger. In parallel, passed on to `found` in the order of `buckets`.
    pub(super) fn hand_over_again<V: Volume>(
        hierarchy: &Hierarchy<V>,
        pairs: &NodePairs,
        strays: &Strays<V>,
        span: (f64, f64),
        buckets: &[NodeId],
        found: &mut impl FnMut(PairKey),
    ) {
        in_order(
            buckets,
            |&n, mut out| {
                let partners = pairs.open_partners(n, &hierarchy.bvh);
                for m in partners.filter(|&m| m >= n || !strays.refitted(m)) {
                    let moved = |v| strays.moved(v);
                    hierarchy.near_node_features(n, m, span, moved, &mut out);
                }
            },
            found,
        );
    }

    /// Whether some open leaf pair holds `key` among its feature pairs now and the pair's
    /// primitives may come within `eta1` over `span`.
    pub(super) fn overlaps<V: Volume>(
        hierarchy: &Hierarchy<V>,
        pairs: &NodePairs,
        span: (f64, f64),
        key: PairKey,
    ) -> bool {
        if !hierarchy.near(key, span) {
            return false;
        }
        let (bvh, leaves) = (&hierarchy.bvh, &hierarchy.leaves);
        let (mut side, _) = leaves.sides(key);
        side.any(|la| {
            pairs.open_partners(bvh.leaf_node(la), bvh).any(|node| {
                (bvh.bucket(node).unwrap_or_default())
                    .iter()
                    .any(|&lb| leaves.covers(la, lb, key))
            })
        })
    }

    /// Heap bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.opened.capacity() * 4
    }
}

/// Calls `each(item, out)` for every item, in parallel when there are many, then passes what
/// each pushed to `out` on to `found` in item order: the same calls, in the same order, as one
/// serial pass, whatever the number of threads.
fn in_order<T: Sync>(
    items: &[T],
    each: impl Fn(&T, &mut dyn FnMut(PairKey)) + Sync,
    found: &mut impl FnMut(PairKey),
) {
    if items.len() < 2 * HAND_OVER_TASK {
        for item in items {
            each(item, found);
        }
        return;
    }
    let chunks: Vec<Vec<PairKey>> = items
        .par_chunks(HAND_OVER_TASK)
        .map_init(
            || zone!("list_task"),
            |_, chunk| {
                let mut keys = Vec::new();
                for item in chunk {
                    each(item, &mut |k| keys.push(k));
                }
                keys
            },
        )
        .collect();
    for k in chunks.into_iter().flatten() {
        found(k);
    }
}
