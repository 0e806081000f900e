//! The kinetic separation list (thesis §5.3 after Weller and Zachmann 2006; DESIGN §6): the
//! frontier of a self-traversal of one [`Bvh`], maintained by certificates.
//!
//! **Pairs.** A node pair is either *apart* (a frontier pair: its volumes do not overlap now) or
//! *open* (they overlap, and the traversal continues below it: its child pairs exist). The
//! root's self pair is always open. An open internal pair `(A, B)` has the child pairs
//! `(A_i, B_j)` (for a self pair `(A, A)`: `(A_l, A_l)`, `(A_r, A_r)`, `(A_l, A_r)`, leaving out
//! self pairs of leaves); an open leaf pair has handed its feature pairs to the separation slabs
//! ([`Leaves::features`]).
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
//! test ([`References::follows`]). A vertex that strays refits its leaves and the ancestors
//! whose volumes no longer contain them ([`Bvh::place_bucket`]); each node keeps an intrusive list
//! of the pairs it is in, so only the pairs of the changed nodes are re-timed.
//!
//! Pair records are a structure of arrays indexed by pair id with a free list; the certificates
//! sit in the list's own [`EventQueue`] keyed by pair id, so ties pop in id order and a run is
//! deterministic.

use super::bvh::{Bvh, NodeId};
use super::kdop::{after, AxisHint, Volume, FIXED_AXES};
use super::leaves::{LeafId, Leaves, References};
use super::PAR_MIN_LEN;
use crate::events::EventId;
use crate::events::{EventQueue, SparseSlots};
use crate::penalty::PairKey;
use crate::profiling::zone;
use crate::state::{VertexId, VertexState};
use rayon::prelude::*;

/// Counters of a separation list (cheap, always on).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ListStats {
    /// Apart (frontier) pairs alive now.
    pub apart: usize,
    /// Open pairs alive now (self pairs of internal nodes included).
    pub open: usize,
    /// Most pairs alive at once.
    pub peak_pairs: usize,
    /// Integral of the number of live pairs over simulated time (pair-seconds): divided by the
    /// simulated time, the average size of the separation list.
    pub pair_seconds: f64,
    /// Certificates processed.
    pub certificates: u64,
    /// Pairs opened.
    pub descents: u64,
    /// Open pairs collapsed.
    pub collapses: u64,
    /// Pairs re-timed after refits.
    pub retimes: u64,
    /// Leaf volumes refitted after vertices strayed from their references.
    pub leaf_refits: u64,
    /// Pairs re-timed at all-vertex events because their certificates were cut short there
    /// (`speed.short_circuit`).
    pub short_circuit_retimes: u64,
    /// Hierarchies built after the first, because refits had let the last grow loose.
    pub trees: u64,
}

/// Marks no pair, and the end of a node's pair list.
const NONE: u32 = u32::MAX;

/// Node pairs (structure of arrays, indexed by pair id).
#[derive(Debug, Default)]
struct Pairs {
    /// The two nodes, `a <= b`.
    a: Vec<NodeId>,
    b: Vec<NodeId>,
    /// First child pair of an open pair (`NONE` if apart or a leaf pair).
    child: Vec<u32>,
    /// Next sibling under the same parent pair.
    sibling: Vec<u32>,
    /// [`OPEN`], [`LIVE`] and [`CUT`], one byte a pair.
    flags: Vec<u8>,
    /// Links of the per-node pair lists, one per side (`a`, then `b`; a self pair is listed
    /// once): entries are `pair << 1 | side`. The lists are singly linked (a node is in a few
    /// pairs, so unlinking walks a short list; back links would cost 8 bytes a pair).
    next: Vec<[u32; 2]>,
}

/// Flag of an open pair (its volumes overlap and its child pairs exist).
const OPEN: u8 = 1;
/// Flag of a pair in use (not on the free list).
const LIVE: u8 = 2;
/// Flag of a pair in the list's `cut` (its certificate stops at `stop`).
const CUT: u8 = 4;

impl Pairs {
    /// Whether pair `p` has `flag`.
    #[inline]
    fn is(&self, p: usize, flag: u8) -> bool {
        self.flags[p] & flag != 0
    }

    /// Sets or clears `flag` of pair `p`.
    #[inline]
    fn set(&mut self, p: usize, flag: u8, on: bool) {
        if on {
            self.flags[p] |= flag;
        } else {
            self.flags[p] &= !flag;
        }
    }
}

/// The kinetic separation list over volumes of kind `V` (see the module docs).
#[derive(Debug)]
pub(crate) struct SeparationList<V> {
    leaves: Leaves,
    refs: References,
    bvh: Bvh<V>,
    /// Half of `eta1`: two leaves apart are at least `eta1` apart.
    margin: f64,
    /// How far a vertex may stray from its reference path without a refit.
    slack: f64,
    eager: bool,
    now: f64,
    t_end: f64,
    /// The short-circuit (see [`SeparationList::short_circuit`]): no certificate is computed
    /// past it; `+inf` when off.
    stop: f64,
    /// Pairs whose certificates were cut short at `stop`, to re-time there.
    cut: Vec<u32>,
    /// Inside [`SeparationList::rebuild`]: open pairs are re-timed eagerly, and leaf pairs that
    /// open are not noted in `opened`, since the rebuild hands over every open leaf pair.
    rebuilding: bool,
    /// Leaf pairs opened by descents and not handed over yet: they are handed over together,
    /// in parallel, once the certificates due are processed.
    opened: Vec<u32>,
    pairs: Pairs,
    free: Vec<u32>,
    /// Per node: the first entry of its pair list.
    head: Vec<u32>,
    /// Certificates by pair id: a few thousand of millions of ids are queued at a time, so the
    /// slots sit in a hash map rather than an array over every pair id.
    queue: EventQueue<8, SparseSlots>,
    /// Feature pairs taken back since the engine last asked.
    lost: Vec<PairKey>,
    node_stamp: Vec<u32>,
    /// Per vertex: the update epoch that last reset its reference.
    vertex_stamp: Vec<u32>,
    epoch: u32,
    scratch_nodes: Vec<NodeId>,
    scratch_leaves: Vec<LeafId>,
    /// One bit a leaf, all clear between updates (see [`SeparationList::leaves_of`]).
    leaf_bits: Vec<u64>,
    scratch_buckets: Vec<NodeId>,
    /// The fitted volumes of a batch of refitted buckets (at most [`REFIT_BATCH`]).
    scratch_volumes: Vec<V>,
    scratch_pairs: Vec<u32>,
    scratch_when: Vec<Option<f64>>,
    stack: Vec<u32>,
    stats: ListStats,
    /// Audit calls so far (see [`SeparationList::audit`]).
    audits: std::sync::atomic::AtomicU64,
    /// Axis orders of the node-pair tests and of the VT and EE feature-pair tests.
    pair_axes: AxisHint,
    near_axes: [AxisHint; 2],
    /// [`Bvh::spread`] just after the hierarchy was built (`+inf` before the first rebuild).
    built_spread: f64,
}

/// A rebuild replaces the hierarchy when refits have grown its [`Bvh::spread`] past this
/// multiple of its spread when built: the internal volumes then hold leaves that have drifted
/// apart, and the list holds many pairs that a fresh hierarchy would not need.
const LOOSE_TREE: f64 = 2.0;

/// Pairs per batch of the passes over many pairs (re-timing, handing over at a rebuild): big
/// enough to keep both threads busy, small enough that the batch's scratch lists stay small
/// next to the list itself.
const BATCH: usize = 1 << 16;

/// Buckets refitted per batch of an update: their volumes are fitted in parallel and held
/// until placed (a few megabytes of 18-DOPs), enough for the placing to go on the pool.
const REFIT_BATCH: usize = 1 << 14;

/// Fewest buckets fitted per rayon task (a bucket's fit takes about a microsecond).
const REFIT_TASK: usize = 32;

/// Changed nodes whose pair lists are walked per rayon task after a refit (a node holds a few
/// to a few dozen pairs).
const WALK_TASK: usize = 32;

/// Changed nodes walked per group: each group's pairs are listed before they are re-timed.
const WALK_GROUP: usize = 1 << 12;

/// Leaf pairs (or refitted buckets) per rayon task when feature pairs are handed over: each
/// tests every feature pair under its open leaf pairs, 5 us or more on the paper's scenes
/// (170 us on average for a refitted bucket on the reef knot), far above what a fork costs
/// while the pool's workers are awake (`engine::warm_workers`).
const HAND_OVER_TASK: usize = 2;

/// The O(list) part of the audit runs on every this-many calls.
const FULL_AUDIT_EVERY: u64 = 32;

impl<V: Volume> SeparationList<V> {
    /// A separation list over these primitives; `eta1` is the first layer's thickness, `slack`
    /// how far (cm) a vertex may stray from its reference before its leaves are refitted, and
    /// `eager` selects the collapse certificate (see the module docs).
    pub(crate) fn new(
        leaves: Leaves,
        state: &VertexState,
        eta1: f64,
        slack: f64,
        eager: bool,
    ) -> Self {
        let bvh = Bvh::over(&leaves, state, 0.0);
        let nodes = bvh.len();
        Self {
            refs: References::new(state.len()),
            leaves,
            bvh,
            margin: 0.5 * eta1,
            slack,
            eager,
            now: 0.0,
            t_end: 0.0,
            stop: f64::INFINITY,
            cut: Vec::new(),
            rebuilding: false,
            opened: Vec::new(),
            pairs: Pairs::default(),
            free: Vec::new(),
            head: vec![NONE; nodes],
            queue: EventQueue::new(),
            lost: Vec::new(),
            node_stamp: vec![0; nodes],
            vertex_stamp: vec![0; state.len()],
            epoch: 0,
            scratch_nodes: Vec::new(),
            scratch_leaves: Vec::new(),
            leaf_bits: Vec::new(),
            scratch_buckets: Vec::new(),
            scratch_volumes: Vec::new(),
            scratch_pairs: Vec::new(),
            scratch_when: Vec::new(),
            stack: Vec::new(),
            stats: ListStats::default(),
            audits: std::sync::atomic::AtomicU64::new(0),
            pair_axes: AxisHint::new(false),
            near_axes: [AxisHint::new(false), AxisHint::new(false)],
            built_spread: f64::INFINITY,
        }
    }

    /// Replaces the hierarchy by one built over the leaves at `t` and empties the list, whose
    /// pairs name the old nodes; the rebuild that follows starts again from the root's pair.
    fn replace_tree(&mut self, state: &VertexState, t: f64) {
        // The old list and hierarchy go first, so that the process never holds two.
        self.pairs = Pairs::default();
        self.free = Vec::new();
        self.cut.clear();
        self.queue.clear();
        self.bvh = Bvh::build(&[], |_, _| false, Bvh::placeholder());
        self.bvh = Bvh::over(&self.leaves, state, t);
        let nodes = self.bvh.len();
        self.head = vec![NONE; nodes];
        self.node_stamp = vec![0; nodes];
        self.lost.clear();
        (self.stats.apart, self.stats.open) = (0, 0);
        self.stats.trees += 1;
    }

    /// Turns adaptive k-DOP axis ordering on or off (`speed.axis_ordering`; see [`AxisHint`]).
    pub(crate) fn set_adaptive_axes(&mut self, on: bool) {
        self.pair_axes.set_adaptive(on);
        self.near_axes.iter_mut().for_each(|h| h.set_adaptive(on));
    }

    /// The leaves and their topology.
    pub(crate) fn leaves(&self) -> &Leaves {
        &self.leaves
    }

    /// Counters.
    pub(crate) fn stats(&self) -> &ListStats {
        &self.stats
    }

    /// Leaf-node (bucket) volumes refitted so far after vertices strayed.
    pub(crate) fn leaf_refits(&self) -> u64 {
        self.stats.leaf_refits
    }

    /// Certificates queued now.
    pub(crate) fn certificates(&self) -> usize {
        self.queue.len()
    }

    /// Heap bytes held (for the memory-per-vertex measurements).
    pub(crate) fn bytes(&self) -> usize {
        let p = &self.pairs;
        self.bvh.bytes()
            + self.refs.bytes()
            + (p.a.capacity() + p.b.capacity() + p.child.capacity() + p.sibling.capacity()) * 4
            + p.flags.capacity()
            + self.cut.capacity() * 4
            + p.next.capacity() * 8
            + (self.head.capacity() + self.node_stamp.capacity() + self.free.capacity()) * 4
            + self.opened.capacity() * 4
            + self.scratch_volumes.capacity() * std::mem::size_of::<V>()
            + self.queue.len() * 20
    }

    /// The time of the next certificate failure (`now` while taken-back pairs wait to be
    /// collected, `+inf` if none).
    pub(crate) fn next_failure_time(&self) -> f64 {
        if !self.lost.is_empty() {
            return self.now;
        }
        self.queue.peek().map_or(f64::INFINITY, |(_, t)| t)
    }

    fn account(&mut self, t: f64) {
        if t > self.now {
            let live = self.stats.apart + self.stats.open;
            self.stats.pair_seconds += live as f64 * (t - self.now);
            self.now = t;
        }
    }

    fn pad(&self) -> f64 {
        self.margin + self.slack
    }

    /// Starts a new horizon `[t, t_end]`: every vertex's trajectory becomes its reference, every
    /// volume is refitted and every pair re-timed; calls `found` for the feature pairs of leaf
    /// pairs that open.
    pub(crate) fn rebuild(
        &mut self,
        state: &VertexState,
        t: f64,
        t_end: f64,
        found: &mut impl FnMut(PairKey),
    ) {
        self.account(t);
        self.t_end = t_end;
        self.refs.reset_all(state, t_end);
        let pad = self.pad();
        let grow = self.slack;
        self.bvh
            .refit_all(&self.leaves, &self.refs, (t, t_end), pad, grow);
        let mut spread = self.bvh.spread();
        if spread > LOOSE_TREE * self.built_spread {
            self.replace_tree(state, t);
            self.bvh
                .refit_all(&self.leaves, &self.refs, (t, t_end), pad, grow);
            spread = self.bvh.spread();
        }
        if self.pairs.a.is_empty() {
            self.built_spread = spread;
        }
        self.rebuilding = true;
        let root = NodeId::ROOT;
        if self.pairs.a.is_empty() && !self.bvh.is_empty() && self.has_self_pair(root) {
            self.alloc(root, root);
            self.stats.open += 1;
            self.stats.apart -= 1;
            self.pairs.set(0, OPEN, true);
            if self.bvh.bucket(root).is_none() {
                self.descend_children(0, t);
            }
        }
        // Every live pair is re-timed, then every open leaf pair hands over, in pair order; a
        // chunk of pair ids at a time, so that no list of all pairs is held.
        let count = self.pairs.a.len() as u32;
        let chunks = || {
            (0..count)
                .step_by(BATCH)
                .map(|p| p..(p + BATCH as u32).min(count))
        };
        let mut batch = std::mem::take(&mut self.scratch_pairs);
        for ids in chunks() {
            batch.clear();
            batch.extend(ids.filter(|&p| self.pairs.is(p as usize, LIVE)));
            self.schedule_batch(&batch, t);
        }
        self.process_due(t);
        debug_assert!(self.opened.is_empty());
        self.rebuilding = false;
        for ids in chunks() {
            batch.clear();
            batch.extend(ids.filter(|&p| {
                let i = p as usize;
                self.pairs.is(i, LIVE) && self.pairs.is(i, OPEN) && self.is_leaf_pair(i)
            }));
            self.in_order(
                &batch,
                |list, &p, mut out| {
                    let i = p as usize;
                    list.hand_over(list.pairs.a[i], list.pairs.b[i], &mut out)
                },
                found,
            );
        }
        self.scratch_pairs = batch;
    }

    /// After the velocities of `vertices` changed at `t`: refits the leaves of the vertices that
    /// left their reference paths, re-times the pairs of the changed nodes and processes what
    /// is due now, calling `found` for feature pairs handed over.
    pub(crate) fn update(
        &mut self,
        state: &VertexState,
        t: f64,
        vertices: &[u32],
        found: &mut impl FnMut(PairKey),
    ) {
        self.account(t);
        let mut dirty = std::mem::take(&mut self.scratch_leaves);
        dirty.clear();
        self.epoch = self.epoch.wrapping_add(1);
        let (refs, t_end, slack) = (&self.refs, self.t_end, self.slack);
        let strayed: Vec<VertexId> = vertices
            .par_iter()
            .with_min_len(PAR_MIN_LEN)
            .map_init(
                || zone!("list_task"),
                |_, &v| {
                    let v = VertexId::new(v);
                    (!refs.follows(v, state, t, t_end, slack)).then_some(v)
                },
            )
            .flatten_iter()
            .collect();
        for &v in &strayed {
            self.refs.reset(v, state, self.t_end);
            self.vertex_stamp[v.index()] = self.epoch;
        }
        self.leaves_of(&strayed, &mut dirty);
        if !dirty.is_empty() {
            let mut changed = std::mem::take(&mut self.scratch_nodes);
            changed.clear();
            let mut buckets = std::mem::take(&mut self.scratch_buckets);
            buckets.clear();
            let (pads, span, epoch) = ((self.pad(), self.slack), (t, self.t_end), self.epoch);
            let stamp = &mut self.node_stamp;
            for &l in &dirty {
                let node = self.bvh.leaf_node(l);
                // Listed once, for its first leaf.
                if std::mem::replace(&mut stamp[node.index()], epoch) != epoch {
                    buckets.push(node);
                }
            }
            self.stats.leaf_refits += buckets.len() as u64;
            // The buckets' volumes are fitted in parallel, a batch at a time, then placed in
            // list order (on the pool when many): the same volumes and order as refitting
            // each in turn.
            let mut fitted = std::mem::take(&mut self.scratch_volumes);
            for batch in buckets.chunks(REFIT_BATCH) {
                let (bvh, leaves, refs) = (&self.bvh, &self.leaves, &self.refs);
                (batch.par_iter().with_min_len(REFIT_TASK))
                    .map_init(
                        || zone!("list_task"),
                        |_, &n| bvh.fit_bucket(leaves, refs, n, span, pads.0),
                    )
                    .collect_into_vec(&mut fitted);
                (self.bvh).place_buckets(batch, &fitted, span, pads.1, &mut |n, ancestor| {
                    // A bucket is listed once; an ancestor the first time it changes.
                    if !ancestor || stamp[n.index()] != epoch {
                        stamp[n.index()] = epoch;
                        changed.push(n);
                    }
                });
            }
            self.scratch_volumes = fitted;
            // The nodes' pair lists are walked in parallel, a group of nodes at a time, and their
            // pairs re-timed in node order, a batch at a time: after a whole-mesh kick nearly
            // every pair is, and a list of them all would be the largest array of the run.
            let mut pairs = std::mem::take(&mut self.scratch_pairs);
            pairs.clear();
            for group in changed.chunks(WALK_GROUP) {
                if group.len() < 2 * WALK_TASK {
                    self.pairs_to_retime(group, &mut pairs);
                } else {
                    let lists: Vec<Vec<u32>> = (group.par_chunks(WALK_TASK))
                        .map_init(
                            || zone!("list_task"),
                            |_, nodes| {
                                let mut list = Vec::new();
                                self.pairs_to_retime(nodes, &mut list);
                                list
                            },
                        )
                        .collect();
                    lists.iter().for_each(|list| pairs.extend_from_slice(list));
                }
                if pairs.len() >= BATCH {
                    self.retime_all(&pairs, t);
                    pairs.clear();
                }
            }
            self.retime_all(&pairs, t);
            self.scratch_pairs = pairs;
            self.scratch_nodes = changed;
            self.process_due(t);
            self.hand_over_opened(found);
            self.in_order(
                &buckets,
                |list, &n, mut out| list.hand_over_again(n, &mut out),
                found,
            );
            self.scratch_buckets = buckets;
        }
        self.scratch_leaves = dirty;
    }

    /// Appends the pairs of `nodes` (changed at this update, stamped with the epoch) to
    /// `pairs`, node by node in list order; a pair of two changed nodes only for the smaller.
    fn pairs_to_retime(&self, nodes: &[NodeId], pairs: &mut Vec<u32>) {
        for &n in nodes {
            let mut e = self.head[n.index()];
            while e != NONE {
                let (p, side) = (e >> 1, (e & 1) as usize);
                let other = [self.pairs.b[p as usize], self.pairs.a[p as usize]][side];
                if other >= n || self.node_stamp[other.index()] != self.epoch {
                    pairs.push(p);
                }
                e = self.pairs.next[p as usize][side];
            }
        }
    }

    /// Re-times `pairs` at `t` and counts them.
    fn retime_all(&mut self, pairs: &[u32], t: f64) {
        self.stats.retimes += pairs.len() as u64;
        self.schedule_batch(pairs, t);
    }

    /// Sets `dirty` to the leaves holding any of `vertices`, ascending and without repeats.
    /// When many vertices strayed (a whole-mesh kick), they are marked in a bitset over the
    /// leaves and read back in order: listing each vertex's leaves before sorting would hold
    /// every leaf about six times (about 40 MB at 10^6 vertices).
    fn leaves_of(&mut self, vertices: &[VertexId], dirty: &mut Vec<LeafId>) {
        dirty.clear();
        if vertices.len() < self.leaves.len().div_ceil(64) {
            self.leaves_sorted(vertices, dirty);
        } else {
            self.leaves_marked(vertices, dirty);
        }
    }

    /// [`leaves_of`](Self::leaves_of) for a few vertices: listed, sorted, deduplicated.
    fn leaves_sorted(&self, vertices: &[VertexId], dirty: &mut Vec<LeafId>) {
        for &v in vertices {
            dirty.extend_from_slice(self.leaves.of_vertex(v));
        }
        dirty.sort_unstable();
        dirty.dedup();
    }

    /// [`leaves_of`](Self::leaves_of) for many vertices: marked in the bitset, read back in
    /// order, and the bitset cleared.
    fn leaves_marked(&mut self, vertices: &[VertexId], dirty: &mut Vec<LeafId>) {
        let bits = &mut self.leaf_bits;
        bits.resize(self.leaves.len().div_ceil(64), 0);
        for &v in vertices {
            for &l in self.leaves.of_vertex(v) {
                bits[l.index() / 64] |= 1 << (l.get() % 64);
            }
        }
        for (w, word) in (0u32..).step_by(64).zip(bits.iter_mut()) {
            let mut rest = std::mem::take(word);
            while rest != 0 {
                dirty.push(LeafId::new(w + rest.trailing_zeros()));
                rest &= rest - 1;
            }
        }
    }

    /// At an all-vertex event at `t` (thesis §8.1): from now on no certificate is computed past
    /// `stop`, the next all-vertex event (`+inf`: never short-circuit), and the pairs whose
    /// certificates were cut short at this event are re-timed. Certificates due now are
    /// processed by the next [`advance`](Self::advance), at `t`.
    pub(crate) fn short_circuit(&mut self, t: f64, stop: f64) {
        self.account(t);
        self.stop = stop;
        let mut pairs = std::mem::take(&mut self.scratch_pairs);
        pairs.clear();
        for p in self.cut.drain(..) {
            self.pairs.set(p as usize, CUT, false);
            if self.pairs.is(p as usize, LIVE) {
                pairs.push(p);
            }
        }
        self.stats.short_circuit_retimes += pairs.len() as u64;
        self.schedule_batch(&pairs, t);
        self.scratch_pairs = pairs;
    }

    /// Processes every certificate due at or before `t`: calls `found` for feature pairs handed
    /// to slabs and `lost` for those taken back.
    pub(crate) fn advance(
        &mut self,
        t: f64,
        found: &mut impl FnMut(PairKey),
        lost: &mut impl FnMut(PairKey),
    ) {
        self.account(t);
        self.process_due(t);
        self.hand_over_opened(found);
        for k in self.lost.drain(..) {
            lost(k);
        }
    }

    /// Hands over the leaf pairs opened since the last call ([`Self::hand_over`]), in
    /// parallel, passing the feature pairs on to `found` in the order the pairs opened.
    fn hand_over_opened(&mut self, found: &mut impl FnMut(PairKey)) {
        let mut opened = std::mem::take(&mut self.opened);
        self.in_order(
            &opened,
            |list, &p, mut out| {
                let i = p as usize;
                // Still open: an ancestor overlaps whenever it does, so none collapsed it.
                if list.pairs.is(i, LIVE) && list.pairs.is(i, OPEN) {
                    list.hand_over(list.pairs.a[i], list.pairs.b[i], &mut out);
                }
            },
            found,
        );
        opened.clear();
        self.opened = opened;
    }

    /// Calls `found` for the feature pairs of leaf nodes `a` and `b` (within the bucket for
    /// `a == b`; [`Leaves::group_features`]).
    fn node_features(&self, a: NodeId, b: NodeId, found: &mut impl FnMut(PairKey)) {
        let (Some(ba), Some(bb)) = (self.bvh.bucket(a), self.bvh.bucket(b)) else {
            return;
        };
        self.leaves
            .group_features(ba, (a != b).then_some(bb), found);
    }

    /// Calls `found` for the feature pairs of leaf nodes `a` and `b` that may come within
    /// `eta1` before the horizon's end ([`References::near`]).
    fn hand_over(&self, a: NodeId, b: NodeId, found: &mut impl FnMut(PairKey)) {
        self.near_node_features(a, b, |_| true, found);
    }

    /// Calls `found` for the feature pairs of leaf nodes `a` and `b` with a vertex that `marked`
    /// holds that may come within `eta1` before the horizon's end
    /// ([`References::near_group_features`]).
    fn near_node_features(
        &self,
        a: NodeId,
        b: NodeId,
        marked: impl Fn(VertexId) -> bool,
        found: &mut impl FnMut(PairKey),
    ) {
        let (Some(ba), Some(bb)) = (self.bvh.bucket(a), self.bvh.bucket(b)) else {
            return;
        };
        let [vt, ee] = &self.near_axes;
        let span = (self.now, self.t_end);
        let buckets = (ba, (a != b).then_some(bb));
        (self.refs).near_group_features::<V>(
            &self.leaves,
            buckets,
            self.pad(),
            span,
            [vt, ee],
            marked,
            found,
        );
    }

    /// [`References::near`] over the current horizon.
    fn near(&self, key: PairKey) -> bool {
        let [vt, ee] = &self.near_axes;
        let span = (self.now, self.t_end);
        (self.refs).near::<V>(&self.leaves, key, self.pad(), span, [vt, ee])
    }

    /// Whether both nodes of pair `p` are leaf nodes.
    fn is_leaf_pair(&self, p: usize) -> bool {
        let (a, b) = (self.pairs.a[p], self.pairs.b[p]);
        self.bvh.bucket(a).is_some() && self.bvh.bucket(b).is_some()
    }

    /// Whether node `n` needs a self pair: an internal node, or a bucket of two or more leaves.
    fn has_self_pair(&self, n: NodeId) -> bool {
        self.bvh.bucket(n).is_none_or(|b| b.len() > 1)
    }

    /// The leaf nodes paired with leaf node `n` by an open pair (`n` too, when its bucket's self
    /// pair is open), walking the per-node list.
    fn open_partners(&self, n: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        let mut e = self.head[n.index()];
        std::iter::from_fn(move || {
            while e != NONE {
                let (p, side) = ((e >> 1) as usize, (e & 1) as usize);
                e = self.pairs.next[p][side];
                let other = if side == 0 {
                    self.pairs.b[p]
                } else {
                    self.pairs.a[p]
                };
                if self.pairs.is(p, OPEN) && self.bvh.bucket(other).is_some() {
                    return Some(other);
                }
            }
            None
        })
    }

    /// Hands over again the near feature pairs of every open pair of leaf node `n` that involve
    /// a vertex whose reference changed in this update (stamped `epoch`): the others' answer
    /// cannot have changed. A pair of two leaf nodes refitted in this update is looked at
    /// once, from the larger.
    fn hand_over_again(&self, n: NodeId, found: &mut impl FnMut(PairKey)) {
        let refitted = |m: NodeId| self.node_stamp[m.index()] == self.epoch;
        for m in self.open_partners(n).filter(|&m| m >= n || !refitted(m)) {
            let moved = |v: VertexId| self.vertex_stamp[v.index()] == self.epoch;
            self.near_node_features(n, m, moved, found);
        }
    }

    /// Whether some open leaf pair holds `key` among its feature pairs now and the pair's
    /// primitives may come within `eta1` before the horizon's end.
    pub(crate) fn overlaps(&self, key: PairKey) -> bool {
        if !self.near(key) {
            return false;
        }
        let (mut side, _) = self.leaves.sides(key);
        side.any(|la| {
            self.open_partners(self.bvh.leaf_node(la)).any(|node| {
                self.bvh
                    .bucket(node)
                    .unwrap_or_default()
                    .iter()
                    .any(|&lb| self.leaves.covers(la, lb, key))
            })
        })
    }

    /// The audit (`--audit`), at `t` (it holds between a kick and the update that follows it,
    /// so the engine may call it at either): every vertex is within the slack of its reference
    /// and inside its leaves' volumes grown by half of `eta1`, every node contains its
    /// children, no apart pair whose certificate is not due overlaps, and no apart pair without
    /// a certificate may overlap before the horizon's end (before the short-circuit, for the
    /// pairs cut short there). Together: every leaf pair that could come within `eta1` before
    /// its next event is under an open leaf pair (whose features have slabs) or certified apart
    /// by a frontier pair.
    pub(crate) fn audit(&self, state: &VertexState, t: f64) -> Result<(), String> {
        let t_end = self.t_end;
        for v in (0..state.len()).map(VertexId::from_usize) {
            let p = state.position_at(v.index(), t);
            let slack = self.slack * (1.0 + 1e-9) + 1e-12;
            if (p - self.refs.at(v, t, t_end)).length() > slack {
                return Err(format!(
                    "vertex {v} strayed from its broad-phase reference at t = {t}"
                ));
            }
            for &l in self.leaves.of_vertex(v) {
                let vol = self.bvh.volume(self.bvh.leaf_node(l));
                if !vol.holds_point(p, self.margin * (1.0 - 1e-9), t, t_end) {
                    return Err(format!(
                        "vertex {v} is not inside the volume of leaf {l} at t = {t}"
                    ));
                }
            }
        }
        // The node and frontier scans are O(list); the engine audits before every sweep and
        // after every event, so they run on every [`FULL_AUDIT_EVERY`]th call (counted, so the
        // choice is deterministic); the vertex checks above run on every call.
        let calls = self
            .audits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if calls % FULL_AUDIT_EVERY != 0 {
            return Ok(());
        }
        self.bvh.validate(t, t_end)?;
        if t >= t_end {
            // The horizon is over: certificates stop short of its end (the short-circuit) and
            // the rebuild due now re-times every pair.
            return Ok(());
        }
        for p in 0..self.pairs.a.len() {
            if !self.pairs.is(p, LIVE) || self.pairs.is(p, OPEN) {
                continue;
            }
            let (a, b) = (self.pairs.a[p], self.pairs.b[p]);
            match self.queue.time_of(EventId(p as u32)) {
                Some(s) if s <= t => {}
                Some(_) if self.overlapping(p as u32, t) => {
                    return Err(format!(
                        "frontier pair of nodes {a} and {b} overlaps at t = {t} but its \
                         certificate is not due"
                    ));
                }
                Some(_) => {}
                None => {
                    // No certificate: apart until the short-circuit if it was cut short there,
                    // otherwise until the horizon's end.
                    let until = if self.pairs.is(p, CUT) {
                        self.stop_at()
                    } else {
                        t_end
                    };
                    let meets = (self.bvh.volume(a))
                        .overlap_interval_from(self.bvh.volume(b), t, until, t_end, &FIXED_AXES)
                        .map(|(s, _)| s)
                        .filter(|&s| s < until);
                    if let Some(s) = meets {
                        return Err(format!(
                            "frontier pair of nodes {a} and {b} has no certificate but may \
                             overlap at t = {s}, before {until}"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn interval(&self, p: u32) -> Option<(f64, f64)> {
        let (a, b) = (self.pairs.a[p as usize], self.pairs.b[p as usize]);
        if a == b {
            return Some((f64::NEG_INFINITY, f64::INFINITY));
        }
        self.bvh.volume(a).overlap_interval_from(
            self.bvh.volume(b),
            self.now,
            self.stop_at(),
            self.t_end,
            &self.pair_axes,
        )
    }

    fn overlapping(&self, p: u32, t: f64) -> bool {
        let (a, b) = (self.pairs.a[p as usize], self.pairs.b[p as usize]);
        if a == b {
            return true;
        }
        (self.bvh.volume(a))
            .overlap_interval_from(
                self.bvh.volume(b),
                t,
                self.t_end.max(t),
                self.t_end.max(t),
                &self.pair_axes,
            )
            .is_some_and(|(s, _)| s <= t)
    }

    /// Calls `each(self, item, out)` for every item, in parallel when there are many, then
    /// passes what each pushed to `out` on to `found` in item order: the same calls, in the
    /// same order, as one serial pass, whatever the number of threads.
    fn in_order<T: Sync>(
        &self,
        items: &[T],
        each: impl Fn(&Self, &T, &mut dyn FnMut(PairKey)) + Sync,
        found: &mut impl FnMut(PairKey),
    ) {
        if items.len() < 2 * HAND_OVER_TASK {
            for item in items {
                each(self, item, found);
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
                        each(self, item, &mut |k| keys.push(k));
                    }
                    keys
                },
            )
            .collect();
        for k in chunks.into_iter().flatten() {
            found(k);
        }
    }

    /// Re-times pairs `ps` at `t` exactly as [`schedule`](Self::schedule) would one by one, in
    /// order; the certificate times are computed in parallel, [`BATCH`] pairs at a time.
    fn schedule_batch(&mut self, ps: &[u32], t: f64) {
        let mut when = std::mem::take(&mut self.scratch_when);
        for chunk in ps.chunks(BATCH) {
            chunk
                .par_iter()
                .with_min_len(PAR_MIN_LEN)
                .map_init(|| zone!("list_task"), |_, &p| self.next_certificate(p, t))
                .collect_into_vec(&mut when);
            for (&p, &s) in chunk.iter().zip(&when) {
                self.queue_certificate(p, s);
            }
        }
        self.scratch_when = when;
    }

    /// Queues pair `p`'s next certificate as seen at `t` (the current time).
    fn schedule(&mut self, p: u32, t: f64) {
        let s = self.next_certificate(p, t);
        self.queue_certificate(p, s);
    }

    /// Queues pair `p`'s certificate at `s`, or drops it for `None`, noting the pair as cut
    /// short when the certificate stopped at the short-circuit rather than the horizon's end.
    fn queue_certificate(&mut self, p: u32, s: Option<f64>) {
        let id = EventId(p);
        match s {
            Some(s) => self.queue.update(id, s),
            None => {
                self.queue.remove(id);
                let waits = self.eager || !self.pairs.is(p as usize, OPEN);
                if waits && self.stop < self.t_end && !self.pairs.is(p as usize, CUT) {
                    self.pairs.set(p as usize, CUT, true);
                    self.cut.push(p);
                }
            }
        }
    }

    /// The end of the certified span: the horizon's end, or the short-circuit before it.
    fn stop_at(&self) -> f64 {
        self.stop.min(self.t_end)
    }

    /// When pair `p`'s next certificate fails, as seen at `t` (the current time); `None`: not
    /// before the horizon's end (or the short-circuit before it).
    fn next_certificate(&self, p: u32, t: f64) -> Option<f64> {
        let stop = self.stop_at();
        let interval = self.interval(p);
        let overlapping = interval.is_some_and(|(s, _)| s <= t);
        if self.pairs.is(p as usize, OPEN) {
            match interval {
                _ if !overlapping => (self.eager || self.rebuilding).then_some(t),
                Some((_, e)) if self.eager && e < stop => {
                    // Overlapping at t: it stops strictly later.
                    Some(if e > t { e } else { after(t) })
                }
                _ => None,
            }
        } else {
            match interval {
                Some((s, _)) if s <= t || s < stop => Some(s.max(t)),
                _ => None,
            }
        }
    }

    /// Processes every certificate due at or before `t`; the leaf pairs it opens wait in
    /// `opened`.
    fn process_due(&mut self, t: f64) {
        while let Some((id, s)) = self.queue.peek() {
            if s > t {
                break;
            }
            self.queue.pop();
            self.stats.certificates += 1;
            let p = id.0;
            let overlapping = self.overlapping(p, t);
            match (self.pairs.is(p as usize, OPEN), overlapping) {
                (false, true) => self.descend(p, t),
                (true, false) => self.collapse(p, t),
                _ => self.schedule(p, t),
            }
        }
    }

    /// Allocates the apart pair of nodes `a <= b`.
    fn alloc(&mut self, a: NodeId, b: NodeId) -> u32 {
        let p = match self.free.pop() {
            Some(p) => p,
            None => {
                let q = &mut self.pairs;
                q.a.push(NodeId::ROOT);
                q.b.push(NodeId::ROOT);
                q.child.push(NONE);
                q.sibling.push(NONE);
                q.flags.push(0);
                q.next.push([NONE; 2]);
                (q.a.len() - 1) as u32
            }
        };
        let i = p as usize;
        self.pairs.a[i] = a;
        self.pairs.b[i] = b;
        self.pairs.child[i] = NONE;
        self.pairs.sibling[i] = NONE;
        self.pairs.set(i, OPEN, false);
        self.pairs.set(i, LIVE, true);
        self.link(p, 0, a);
        if a != b {
            self.link(p, 1, b);
        }
        self.stats.apart += 1;
        let live = self.stats.apart + self.stats.open;
        self.stats.peak_pairs = self.stats.peak_pairs.max(live);
        p
    }

    fn release(&mut self, p: u32) {
        let i = p as usize;
        let (a, b) = (self.pairs.a[i], self.pairs.b[i]);
        self.unlink(p, 0, a);
        if a != b {
            self.unlink(p, 1, b);
        }
        self.queue.remove(EventId(p));
        if self.pairs.is(i, OPEN) {
            self.stats.open -= 1;
        } else {
            self.stats.apart -= 1;
        }
        self.pairs.set(i, LIVE, false);
        self.free.push(p);
    }

    fn link(&mut self, p: u32, side: usize, node: NodeId) {
        let entry = p << 1 | side as u32;
        self.pairs.next[p as usize][side] = self.head[node.index()];
        self.head[node.index()] = entry;
    }

    /// Removes side `side` of pair `p` from node `node`'s list, keeping the others' order.
    fn unlink(&mut self, p: u32, side: usize, node: NodeId) {
        let entry = p << 1 | side as u32;
        let after = self.pairs.next[p as usize][side];
        let mut link = &mut self.head[node.index()];
        while *link != entry {
            debug_assert_ne!(*link, NONE, "pair {p} is not in the list of node {node}");
            let e = *link;
            link = &mut self.pairs.next[(e >> 1) as usize][(e & 1) as usize];
        }
        *link = after;
    }

    /// Opens apart pair `p` (overlapping at `t`) and, below it, every child pair that overlaps;
    /// the leaf pairs opened are noted in `opened`, to hand over (outside a rebuild).
    fn descend(&mut self, p: u32, t: f64) {
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push(p);
        while let Some(q) = stack.pop() {
            let i = q as usize;
            debug_assert!(!self.pairs.is(i, OPEN));
            self.pairs.set(i, OPEN, true);
            self.stats.apart -= 1;
            self.stats.open += 1;
            self.stats.descents += 1;
            if self.is_leaf_pair(i) {
                // A rebuild hands over every open leaf pair at its end: no list of them all.
                if !self.rebuilding {
                    self.opened.push(q);
                }
            } else {
                let mut c = self.make_children(q);
                while c != NONE {
                    if self.overlapping(c, t) {
                        stack.push(c);
                    } else {
                        self.schedule(c, t);
                    }
                    c = self.pairs.sibling[c as usize];
                }
            }
            self.schedule(q, t);
        }
        self.stack = stack;
    }

    /// Creates the root pair's children and descends into those that overlap (first rebuild,
    /// which hands over the open leaf pairs at its end).
    fn descend_children(&mut self, p: u32, t: f64) {
        debug_assert!(self.rebuilding);
        let mut c = self.make_children(p);
        while c != NONE {
            let next = self.pairs.sibling[c as usize];
            if self.overlapping(c, t) {
                self.descend(c, t);
            }
            c = next;
        }
    }

    /// Creates the child pairs of internal pair `p` (see the module docs) and returns the first.
    fn make_children(&mut self, p: u32) -> u32 {
        let i = p as usize;
        let (a, b) = (self.pairs.a[i], self.pairs.b[i]);
        let split = |n: NodeId| match self.bvh.bucket(n) {
            Some(_) => [Some(n), None],
            None => self.bvh.children(n).map(Some),
        };
        let mut kids = [(NodeId::ROOT, NodeId::ROOT); 4];
        let mut count = 0;
        if a == b {
            let [l, r] = self.bvh.children(a);
            for (x, y) in [(l, l), (r, r), (l, r)] {
                if x != y || self.has_self_pair(x) {
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
        let mut first = NONE;
        for &(x, y) in kids[..count].iter().rev() {
            let c = self.alloc(x, y);
            self.pairs.sibling[c as usize] = first;
            first = c;
        }
        self.pairs.child[i] = first;
        first
    }

    /// Collapses open pair `p` (apart at `t`): frees its subtree, takes back the feature pairs
    /// of the open leaf pairs in it (and its own), and re-times it as an apart pair.
    fn collapse(&mut self, p: u32, t: f64) {
        self.stats.collapses += 1;
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push(p);
        while let Some(q) = stack.pop() {
            let i = q as usize;
            let (a, b) = (self.pairs.a[i], self.pairs.b[i]);
            if self.pairs.is(i, OPEN) && self.is_leaf_pair(i) {
                let mut lost = std::mem::take(&mut self.lost);
                self.node_features(a, b, &mut |k| lost.push(k));
                self.lost = lost;
            }
            let mut c = self.pairs.child[i];
            while c != NONE {
                stack.push(c);
                c = self.pairs.sibling[c as usize];
            }
            if q != p {
                self.release(q);
            }
        }
        self.stack = stack;
        let i = p as usize;
        self.pairs.child[i] = NONE;
        self.pairs.set(i, OPEN, false);
        self.stats.open -= 1;
        self.stats.apart += 1;
        self.schedule(p, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kds::kdop::{Aabb, Dop18, Sphere};
    use glam::DVec3;

    #[test]
    fn pair_flags_are_set_and_cleared_one_at_a_time() {
        let mut pairs = Pairs {
            flags: vec![0; 2],
            ..Pairs::default()
        };
        pairs.set(1, OPEN, true);
        pairs.set(1, CUT, true);
        pairs.set(1, CUT, true);
        assert!(pairs.is(1, OPEN) && pairs.is(1, CUT) && !pairs.is(1, LIVE));
        assert_eq!(pairs.flags[0], 0);
        pairs.set(1, OPEN, false);
        assert!(!pairs.is(1, OPEN) && pairs.is(1, CUT));
        pairs.set(0, LIVE, true);
        assert_eq!(pairs.flags, vec![LIVE, CUT]);
    }

    /// Two parallel 4x4-vertex sheets `gap` apart in y, the upper one falling at `speed`.
    fn two_sheets(gap: f64, speed: f64) -> (Leaves, VertexState) {
        let mut state = VertexState::default();
        let mut triangles = Vec::new();
        let mut edges = Vec::new();
        for s in 0..2u32 {
            let base = s * 16;
            for j in 0..4 {
                for i in 0..4 {
                    state.x.push(DVec3::new(i as f64, s as f64 * gap, j as f64));
                    state.t.push(0.0);
                    state.v.push(DVec3::new(0.0, -speed * s as f64, 0.0));
                    state.mass.push(1.0);
                    state.inv_mass.push(1.0);
                    state.kind.push(crate::state::VertexKind::Free);
                }
            }
            for j in 0..3 {
                for i in 0..3 {
                    let v = base + j * 4 + i;
                    triangles.push([v, v + 1, v + 5]);
                    triangles.push([v, v + 5, v + 4]);
                    edges.extend([[v, v + 1], [v, v + 4], [v, v + 5]]);
                }
                edges.push([base + j * 4 + 3, base + j * 4 + 7]);
                edges.push([base + 12 + j, base + 13 + j]);
            }
        }
        (Leaves::new(edges, triangles, 32), state)
    }

    /// Feature pairs between the two sheets reported by brute force over leaf volumes at `t`.
    fn cross_pairs(found: &[PairKey]) -> usize {
        found
            .iter()
            .filter(|k| match **k {
                PairKey::VertexTriangle(v, t) => (v < 16) != (t < 18),
                PairKey::EdgeEdge(..) => false,
            })
            .count()
    }

    fn falling_sheets<V: Volume>(eager: bool) {
        // 3 apart: a sphere around a bucket of four triangles is 2.4 across.
        let (leaves, state) = two_sheets(3.0, 10.0);
        let mut list = SeparationList::<V>::new(leaves, &state, 0.1, 0.025, eager);
        let mut found = Vec::new();
        list.rebuild(&state, 0.0, 1.0, &mut |k| found.push(k));
        // The sheets are 3 apart: only self pairs within each sheet.
        assert_eq!(cross_pairs(&found), 0);
        list.audit(&state, 0.0).unwrap();
        // The upper sheet closes the gap to eta1 = 0.1 at t = 0.29.
        let next = list.next_failure_time();
        assert!(next < 0.29, "{next}");
        let mut t = next;
        while t < 0.29 {
            list.advance(t, &mut |k| found.push(k), &mut |_| {});
            list.audit(&state, t).unwrap();
            t = list.next_failure_time().max(t + 1e-3);
        }
        assert!(cross_pairs(&found) > 0);
    }

    #[test]
    fn falling_sheet_hands_pairs_over_before_eta1() {
        falling_sheets::<Dop18>(true);
        falling_sheets::<Aabb>(true);
        falling_sheets::<Sphere>(true);
        falling_sheets::<Dop18>(false);
    }

    #[test]
    fn separating_sheets_take_pairs_back_eagerly() {
        let (leaves, mut state) = two_sheets(0.05, 0.0);
        let mut list = SeparationList::<Dop18>::new(leaves, &state, 0.1, 0.025, true);
        let mut found = Vec::new();
        list.rebuild(&state, 0.0, 1.0, &mut |k| found.push(k));
        assert!(cross_pairs(&found) > 0);
        // The upper sheet flies off at 10 cm/s.
        for v in 16..32 {
            state.v[v] = DVec3::new(0.0, 10.0, 0.0);
        }
        let all: Vec<u32> = (16..32).collect();
        list.update(&state, 0.0, &all, &mut |k| found.push(k));
        let mut lost = Vec::new();
        let mut t = list.next_failure_time();
        while t < 0.5 {
            list.advance(t, &mut |_| {}, &mut |k| lost.push(k));
            list.audit(&state, t).unwrap();
            t = list.next_failure_time();
        }
        assert!(cross_pairs(&lost) > 0);
        for &k in &lost {
            assert!(!list.overlaps(k) || cross_pairs(&[k]) == 0);
        }
    }

    #[test]
    fn a_hierarchy_grown_loose_is_replaced_by_the_one_a_new_list_would_build() {
        // 0.5 apart, the sheets are split across x and z first: most subtrees hold both.
        let (leaves, mut state) = two_sheets(0.5, 0.0);
        let mut list = SeparationList::<Dop18>::new(leaves, &state, 0.1, 0.025, true);
        list.rebuild(&state, 0.0, 1.0, &mut |_| {});
        // The upper sheet flies 40 along x in the first second, then stops.
        let upper: Vec<u32> = (16..32).collect();
        for &v in &upper {
            state.v[v as usize] = DVec3::new(40.0, 0.0, 0.0);
        }
        list.update(&state, 0.0, &upper, &mut |_| {});
        let mut t = list.next_failure_time();
        while t < 1.0 {
            list.advance(t, &mut |_| {}, &mut |_| {});
            list.audit(&state, t).unwrap();
            t = list.next_failure_time();
        }
        for &v in &upper {
            let i = v as usize;
            (state.x[i], state.t[i], state.v[i]) = (state.position_at(i, 1.0), 1.0, DVec3::ZERO);
        }
        assert_eq!(list.stats().trees, 0);
        let mut found = Vec::new();
        list.rebuild(&state, 1.0, 2.0, &mut |k| found.push(k));
        assert_eq!(
            list.stats().trees,
            1,
            "the sheets' common subtree grew loose"
        );
        list.audit(&state, 1.0).unwrap();
        // A list built anew over the moved sheets holds the same pairs and hands over the same
        // feature pairs.
        let (leaves, _) = two_sheets(0.5, 0.0);
        let mut fresh = SeparationList::<Dop18>::new(leaves, &state, 0.1, 0.025, true);
        let mut fresh_found = Vec::new();
        fresh.rebuild(&state, 1.0, 2.0, &mut |k| fresh_found.push(k));
        assert_eq!(found, fresh_found);
        let counts = |l: &SeparationList<Dop18>| (l.stats().apart, l.stats().open);
        assert_eq!(counts(&list), counts(&fresh));
        assert_eq!(list.bvh.spread(), fresh.bvh.spread());
        // Another rebuild with nothing moved keeps the new hierarchy.
        list.rebuild(&state, 2.0, 3.0, &mut |_| {});
        assert_eq!(list.stats().trees, 1);
    }

    #[test]
    fn the_leaves_of_many_vertices_come_from_the_bitset_in_the_same_order() {
        let (leaves, state) = two_sheets(3.0, 0.0);
        let mut list = SeparationList::<Dop18>::new(leaves, &state, 0.1, 0.025, true);
        let sorted = |list: &SeparationList<Dop18>, vs: &[VertexId]| {
            let mut all: Vec<LeafId> = vs
                .iter()
                .flat_map(|&v| list.leaves.of_vertex(v).iter().copied())
                .collect();
            all.sort_unstable();
            all.dedup();
            all
        };
        let vertices = |vs: &[u32]| vs.iter().copied().map(VertexId::new).collect::<Vec<_>>();
        let (mut listed, mut marked, mut chosen) = (Vec::new(), Vec::new(), Vec::new());
        let every: Vec<u32> = (0..32).rev().collect();
        for vs in [
            vertices(&[5]),
            vertices(&[31, 0, 16]),
            vertices(&every),
            vec![],
        ] {
            list.leaves_sorted(&vs, &mut listed);
            list.leaves_marked(&vs, &mut marked);
            list.leaves_of(&vs, &mut chosen);
            assert_eq!(listed, sorted(&list, &vs), "{vs:?}");
            assert_eq!(marked, listed, "{vs:?}");
            assert_eq!(chosen, listed, "{vs:?}");
            assert!(
                list.leaf_bits.iter().all(|&w| w == 0),
                "the bitset is left clear"
            );
            listed.clear();
            marked.clear();
        }
    }
}
