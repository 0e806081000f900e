//! The node pairs of a separation list and the tree they form (see the parent module's docs).
//!
//! A structure of arrays indexed by [`NodePairId`]: each pair's two nodes, its first child pair
//! and next sibling (an open pair's child pairs are a linked list), and its flags, one byte a
//! pair. Freed ids go on a free list and are reused. Each node also heads an intrusive singly
//! linked list of the pairs it is in (`head`, then `next`): a node is in a few pairs, so
//! unlinking walks a short list, and back links would cost 8 bytes a pair. The store counts
//! its apart and open pairs, for the list's statistics.

use crate::events::EventId;
use crate::kds::bvh::{Bvh, NodeId};
use crate::typed_index::typed_index;

typed_index! {
    /// A node pair of a separation list; its certificate has the same id in the list's queue.
    pub(super) struct NodePairId;
}

impl NodePairId {
    /// No pair (the end of a child or sibling list).
    const NONE: Self = Self::new(u32::MAX);

    /// The id of the pair's certificate in the list's queue.
    #[inline]
    pub(super) const fn event(self) -> EventId {
        EventId::new(self.get())
    }

    /// The pair whose certificate has id `id`.
    #[inline]
    pub(super) const fn of_event(id: EventId) -> Self {
        Self::new(id.0)
    }

    /// `Some(self)`, or `None` for [`NONE`](Self::NONE).
    #[inline]
    fn some(self) -> Option<Self> {
        (self != Self::NONE).then_some(self)
    }
}

/// Flag of an open pair (its volumes overlap and its child pairs exist).
pub(super) const OPEN: u8 = 1;
/// Flag of a pair in use (not on the free list).
pub(super) const LIVE: u8 = 2;
/// Flag of a pair whose certificate stops at the short-circuit (see
/// [`Certificates`](super::certificates::Certificates)).
pub(super) const CUT: u8 = 4;

/// An entry of a node's pair list: a pair and the side of it the node is on (0: `a`, 1: `b`),
/// packed as `pair << 1 | side`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Link(u32);

impl Link {
    /// The end of a list.
    const NONE: Self = Self(u32::MAX);

    #[inline]
    fn new(p: NodePairId, side: usize) -> Self {
        Self(p.get() << 1 | side as u32)
    }

    #[inline]
    fn pair(self) -> NodePairId {
        NodePairId::new(self.0 >> 1)
    }

    #[inline]
    fn side(self) -> usize {
        (self.0 & 1) as usize
    }
}

/// The node pairs (see the module docs).
#[derive(Debug, Default)]
pub(super) struct NodePairs {
    /// The two nodes, `a <= b`.
    a: Vec<NodeId>,
    b: Vec<NodeId>,
    /// First child pair of an open pair (`NONE` if apart or a leaf pair).
    child: Vec<NodePairId>,
    /// Next sibling under the same parent pair.
    sibling: Vec<NodePairId>,
    /// [`OPEN`], [`LIVE`] and [`CUT`].
    flags: Vec<u8>,
    /// The links of the per-node lists, one per side (`a`, then `b`; a self pair is listed
    /// once).
    next: Vec<[Link; 2]>,
    /// Ids of freed pairs, reused last in, first out.
    free: Vec<NodePairId>,
    /// Per node: the first entry of its pair list.
    head: Vec<Link>,
    /// Apart (frontier) pairs alive now.
    apart: usize,
    /// Open pairs alive now.
    open: usize,
    /// Most pairs alive at once.
    peak: usize,
}

impl NodePairs {
    /// No pairs, over a hierarchy of `nodes` nodes.
    pub(super) fn new(nodes: usize) -> Self {
        Self {
            head: vec![Link::NONE; nodes],
            ..Self::default()
        }
    }

    /// Frees every pair and the per-node lists (their memory too), keeping only the peak;
    /// [`set_nodes`](Self::set_nodes) then starts the lists of a new hierarchy.
    pub(super) fn forget(&mut self) {
        *self = Self {
            peak: self.peak,
            ..Self::default()
        };
    }

    /// Starts empty pair lists for a hierarchy of `nodes` nodes.
    pub(super) fn set_nodes(&mut self, nodes: usize) {
        self.head = vec![Link::NONE; nodes];
    }

    /// Number of pair ids ever allocated (live or free).
    pub(super) fn len(&self) -> usize {
        self.a.len()
    }

    /// Whether no pair was ever allocated.
    pub(super) fn is_empty(&self) -> bool {
        self.a.is_empty()
    }

    /// The pair ids in `range`, live or free (every id below [`len`](Self::len) was
    /// allocated once).
    pub(super) fn ids_in(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = NodePairId> {
        debug_assert!(range.end <= self.len());
        range.map(NodePairId::from_usize)
    }

    /// Apart, open and most pairs alive at once.
    pub(super) fn counts(&self) -> (usize, usize, usize) {
        (self.apart, self.open, self.peak)
    }

    /// Pairs alive now.
    pub(super) fn live(&self) -> usize {
        self.apart + self.open
    }

    /// The two nodes of pair `p`, `a <= b`.
    #[inline]
    pub(super) fn nodes(&self, p: NodePairId) -> (NodeId, NodeId) {
        (self.a[p.index()], self.b[p.index()])
    }

    /// Whether pair `p` has `flag`.
    #[inline]
    pub(super) fn is(&self, p: NodePairId, flag: u8) -> bool {
        self.flags[p.index()] & flag != 0
    }

    /// Sets or clears `flag` of pair `p`.
    #[inline]
    pub(super) fn set(&mut self, p: NodePairId, flag: u8, on: bool) {
        if on {
            self.flags[p.index()] |= flag;
        } else {
            self.flags[p.index()] &= !flag;
        }
    }

    /// Whether pair `p` is alive and open.
    #[inline]
    pub(super) fn is_open(&self, p: NodePairId) -> bool {
        self.is(p, LIVE) && self.is(p, OPEN)
    }

    /// The first child pair of pair `p`.
    #[inline]
    pub(super) fn first_child(&self, p: NodePairId) -> Option<NodePairId> {
        self.child[p.index()].some()
    }

    /// The next sibling of pair `p`.
    #[inline]
    pub(super) fn next_sibling(&self, p: NodePairId) -> Option<NodePairId> {
        self.sibling[p.index()].some()
    }

    /// Allocates the apart pair of nodes `a <= b`.
    pub(super) fn alloc(&mut self, a: NodeId, b: NodeId) -> NodePairId {
        let p = match self.free.pop() {
            Some(p) => p,
            None => {
                self.a.push(NodeId::ROOT);
                self.b.push(NodeId::ROOT);
                self.child.push(NodePairId::NONE);
                self.sibling.push(NodePairId::NONE);
                self.flags.push(0);
                self.next.push([Link::NONE; 2]);
                NodePairId::from_usize(self.a.len() - 1)
            }
        };
        let i = p.index();
        self.a[i] = a;
        self.b[i] = b;
        self.child[i] = NodePairId::NONE;
        self.sibling[i] = NodePairId::NONE;
        self.set(p, OPEN, false);
        self.set(p, LIVE, true);
        self.link(p, 0, a);
        if a != b {
            self.link(p, 1, b);
        }
        self.apart += 1;
        self.peak = self.peak.max(self.live());
        p
    }

    /// Frees pair `p` (its certificate is the caller's to remove).
    pub(super) fn release(&mut self, p: NodePairId) {
        let (a, b) = self.nodes(p);
        self.unlink(p, 0, a);
        if a != b {
            self.unlink(p, 1, b);
        }
        if self.is(p, OPEN) {
            self.open -= 1;
        } else {
            self.apart -= 1;
        }
        self.set(p, LIVE, false);
        self.free.push(p);
    }

    /// Marks apart pair `p` open.
    pub(super) fn open(&mut self, p: NodePairId) {
        debug_assert!(!self.is(p, OPEN));
        self.set(p, OPEN, true);
        self.apart -= 1;
        self.open += 1;
    }

    /// Marks open pair `p` apart, without children (they are the caller's to free).
    pub(super) fn close(&mut self, p: NodePairId) {
        self.child[p.index()] = NodePairId::NONE;
        self.set(p, OPEN, false);
        self.open -= 1;
        self.apart += 1;
    }

    fn link(&mut self, p: NodePairId, side: usize, node: NodeId) {
        self.next[p.index()][side] = self.head[node.index()];
        self.head[node.index()] = Link::new(p, side);
    }

    /// Removes side `side` of pair `p` from node `node`'s list, keeping the others' order.
    fn unlink(&mut self, p: NodePairId, side: usize, node: NodeId) {
        let entry = Link::new(p, side);
        let after = self.next[p.index()][side];
        let mut link = &mut self.head[node.index()];
        while *link != entry {
            debug_assert_ne!(
                *link,
                Link::NONE,
                "pair {p} is not in the list of node {node}"
            );
            let e = *link;
            link = &mut self.next[e.pair().index()][e.side()];
        }
        *link = after;
    }

    /// The pairs node `n` is in, each with the node on its other side.
    #[inline]
    fn of_node(&self, n: NodeId) -> impl Iterator<Item = (NodePairId, NodeId)> + '_ {
        let mut e = self.head[n.index()];
        std::iter::from_fn(move || {
            (e != Link::NONE).then(|| {
                let (p, side) = (e.pair(), e.side());
                e = self.next[p.index()][side];
                let other = [self.b[p.index()], self.a[p.index()]][side];
                (p, other)
            })
        })
    }

    /// Creates the child pairs of internal pair `p` (see the parent module's docs) and returns
    /// the first.
    pub(super) fn make_children<V>(&mut self, p: NodePairId, bvh: &Bvh<V>) -> Option<NodePairId> {
        let (a, b) = self.nodes(p);
        let split = |n: NodeId| match bvh.bucket(n) {
            Some(_) => [Some(n), None],
            None => bvh.children(n).map(Some),
        };
        let mut kids = [(NodeId::ROOT, NodeId::ROOT); 4];
        let mut count = 0;
        if a == b {
            let [l, r] = bvh.children(a);
            for (x, y) in [(l, l), (r, r), (l, r)] {
                if x != y || has_self_pair(bvh, x) {
                    kids[count] = (x.min(y), x.max(y));
                    count += 1;
                }
            }
        } else {
            for x in split(a).into_iter().flatten() {
                for y in split(b).into_iter().flatten() {
                    kids[count] = (x.min(y), x.max(y));
                    count += 1;
                }
            }
        }
        let mut first = NodePairId::NONE;
        for &(x, y) in kids[..count].iter().rev() {
            let c = self.alloc(x, y);
            self.sibling[c.index()] = first;
            first = c;
        }
        self.child[p.index()] = first;
        first.some()
    }

    /// Whether both nodes of pair `p` are leaf nodes.
    #[inline]
    pub(super) fn is_leaf_pair<V>(&self, p: NodePairId, bvh: &Bvh<V>) -> bool {
        let (a, b) = self.nodes(p);
        bvh.bucket(a).is_some() && bvh.bucket(b).is_some()
    }

    /// The leaf nodes paired with leaf node `n` by an open pair (`n` too, when its bucket's self
    /// pair is open), walking the node's list.
    pub(super) fn open_partners<'a, V>(
        &'a self,
        n: NodeId,
        bvh: &'a Bvh<V>,
    ) -> impl Iterator<Item = NodeId> + 'a {
        (self.of_node(n))
            .filter(move |&(p, other)| self.is(p, OPEN) && bvh.bucket(other).is_some())
            .map(|(_, other)| other)
    }

    /// Appends the pairs of `nodes` to `pairs`, node by node in list order; a pair of two nodes
    /// that are both `changed` only for the smaller (all of `nodes` are).
    pub(super) fn pairs_of(
        &self,
        nodes: &[NodeId],
        changed: impl Fn(NodeId) -> bool,
        pairs: &mut Vec<NodePairId>,
    ) {
        for &n in nodes {
            for (p, other) in self.of_node(n) {
                if other >= n || !changed(other) {
                    pairs.push(p);
                }
            }
        }
    }

    /// Heap bytes held.
    pub(super) fn bytes(&self) -> usize {
        (self.a.capacity() + self.b.capacity() + self.child.capacity() + self.sibling.capacity())
            * 4
            + self.flags.capacity()
            + self.next.capacity() * 8
            + (self.head.capacity() + self.free.capacity()) * 4
    }
}

/// Whether node `n` needs a self pair: an internal node, or a bucket of two or more leaves.
pub(super) fn has_self_pair<V>(bvh: &Bvh<V>, n: NodeId) -> bool {
    bvh.bucket(n).is_none_or(|b| b.len() > 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_flags_are_set_and_cleared_one_at_a_time() {
        let mut pairs = NodePairs {
            flags: vec![0; 2],
            ..NodePairs::default()
        };
        let [p0, p1] = [0, 1].map(NodePairId::new);
        pairs.set(p1, OPEN, true);
        pairs.set(p1, CUT, true);
        pairs.set(p1, CUT, true);
        assert!(pairs.is(p1, OPEN) && pairs.is(p1, CUT) && !pairs.is(p1, LIVE));
        assert_eq!(pairs.flags[0], 0);
        pairs.set(p1, OPEN, false);
        assert!(!pairs.is(p1, OPEN) && pairs.is(p1, CUT));
        pairs.set(p0, LIVE, true);
        assert_eq!(pairs.flags, vec![LIVE, CUT]);
    }

    #[test]
    fn a_node_lists_its_pairs_and_loses_them_when_freed() {
        let n = NodeId::new;
        let mut pairs = NodePairs::new(3);
        let p = pairs.alloc(n(0), n(1));
        let q = pairs.alloc(n(1), n(1));
        let r = pairs.alloc(n(1), n(2));
        let listed = |pairs: &NodePairs, node| pairs.of_node(node).collect::<Vec<_>>();
        // Newest first; a self pair once, with itself on the other side.
        assert_eq!(listed(&pairs, n(1)), [(r, n(2)), (q, n(1)), (p, n(0))]);
        assert_eq!(pairs.counts(), (3, 0, 3));
        pairs.open(q);
        pairs.release(q);
        assert_eq!(listed(&pairs, n(1)), [(r, n(2)), (p, n(0))]);
        assert_eq!(pairs.counts(), (2, 0, 3));
        // The freed id is reused.
        assert_eq!(pairs.alloc(n(0), n(2)), q);
        assert_eq!(listed(&pairs, n(0)), [(q, n(2)), (p, n(1))]);
        let mut retimed = Vec::new();
        pairs.pairs_of(&[n(0), n(2)], |m| m != n(1), &mut retimed);
        // Pair q joins two changed nodes: listed once, for node 0.
        assert_eq!(retimed, [q, p, r]);
    }
}
