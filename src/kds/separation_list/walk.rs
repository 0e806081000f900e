//! The node walk of a separation list: what happens to the pair tree when certificates fail
//! (see the parent module's docs). An apart pair that starts to overlap opens, and below it
//! every child pair that overlaps, recursively; an open pair that stops overlapping collapses:
//! its subtree is freed and the open leaf pairs in it take their feature pairs back. The walk
//! keeps a stack for its traversals and counts what it did.

use super::certificates::Certificates;
use super::hand_over::HandOver;
use super::hierarchy::Hierarchy;
use super::node_pairs::{NodePairId, NodePairs, OPEN};
use crate::kds::kdop::Volume;

/// The walk's stack and counters (see the module docs).
#[derive(Debug, Default)]
pub(super) struct NodeWalk {
    /// The pairs still to visit in a descent or a collapse.
    stack: Vec<NodePairId>,
    /// Certificates processed.
    pub(super) certificates: u64,
    /// Pairs opened.
    pub(super) descents: u64,
    /// Open pairs collapsed.
    pub(super) collapses: u64,
}

/// What a walk reads and changes, borrowed from the list for one call: the pair tree, its
/// certificates, the hierarchy, and the hand-over's lists of leaf pairs opened and feature
/// pairs taken back.
pub(super) struct Frontier<'a, V> {
    pub(super) pairs: &'a mut NodePairs,
    pub(super) certificates: &'a mut Certificates,
    pub(super) hierarchy: &'a Hierarchy<V>,
    pub(super) hand_over: &'a mut HandOver,
}

impl<V: Volume> Frontier<'_, V> {
    /// Whether pair `p`'s volumes overlap at `t`.
    fn overlapping(&self, p: NodePairId, t: f64) -> bool {
        (self.certificates).overlapping(&*self.pairs, &self.hierarchy.bvh, p, t)
    }

    /// Queues pair `p`'s next certificate as seen at `t`.
    fn schedule(&mut self, p: NodePairId, t: f64) {
        (self.certificates).schedule(self.pairs, &self.hierarchy.bvh, p, t);
    }
}

impl NodeWalk {
    /// Processes every certificate due at or before `t`; the leaf pairs it opens wait in the
    /// hand-over's list.
    pub(super) fn process_due<V: Volume>(&mut self, f: &mut Frontier<'_, V>, t: f64) {
        while let Some(p) = f.certificates.pop_due(t) {
            self.certificates += 1;
            let overlapping = f.overlapping(p, t);
            match (f.pairs.is(p, OPEN), overlapping) {
                (false, true) => self.descend(f, p, t),
                (true, false) => self.collapse(f, p, t),
                _ => f.schedule(p, t),
            }
        }
    }

    /// Opens apart pair `p` (overlapping at `t`) and, below it, every child pair that overlaps;
    /// the leaf pairs opened are noted in the hand-over's list (outside a rebuild).
    pub(super) fn descend<V: Volume>(&mut self, f: &mut Frontier<'_, V>, p: NodePairId, t: f64) {
        let bvh = &f.hierarchy.bvh;
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push(p);
        while let Some(q) = stack.pop() {
            f.pairs.open(q);
            self.descents += 1;
            if f.pairs.is_leaf_pair(q, bvh) {
                // A rebuild hands over every open leaf pair at its end: no list of them all.
                if !f.certificates.rebuilding() {
                    f.hand_over.opened(q);
                }
            } else {
                let mut child = f.pairs.make_children(q, bvh);
                while let Some(c) = child {
                    if f.overlapping(c, t) {
                        stack.push(c);
                    } else {
                        f.schedule(c, t);
                    }
                    child = f.pairs.next_sibling(c);
                }
            }
            f.schedule(q, t);
        }
        self.stack = stack;
    }

    /// Creates the root pair's children and descends into those that overlap (first rebuild,
    /// which hands over the open leaf pairs at its end).
    pub(super) fn descend_children<V: Volume>(
        &mut self,
        f: &mut Frontier<'_, V>,
        p: NodePairId,
        t: f64,
    ) {
        debug_assert!(f.certificates.rebuilding());
        let mut child = f.pairs.make_children(p, &f.hierarchy.bvh);
        while let Some(c) = child {
            let next = f.pairs.next_sibling(c);
            if f.overlapping(c, t) {
                self.descend(f, c, t);
            }
            child = next;
        }
    }

    /// Collapses open pair `p` (apart at `t`): frees its subtree, takes back the feature pairs
    /// of the open leaf pairs in it (and its own), and re-times it as an apart pair.
    fn collapse<V: Volume>(&mut self, f: &mut Frontier<'_, V>, p: NodePairId, t: f64) {
        self.collapses += 1;
        let bvh = &f.hierarchy.bvh;
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push(p);
        while let Some(q) = stack.pop() {
            if f.pairs.is(q, OPEN) && f.pairs.is_leaf_pair(q, bvh) {
                let (a, b) = f.pairs.nodes(q);
                (f.hierarchy).node_features(a, b, &mut f.hand_over.taking_back());
            }
            let mut child = f.pairs.first_child(q);
            while let Some(c) = child {
                stack.push(c);
                child = f.pairs.next_sibling(c);
            }
            if q != p {
                f.pairs.release(q);
                f.certificates.remove(q);
            }
        }
        self.stack = stack;
        f.pairs.close(p);
        f.schedule(p, t);
    }
}
