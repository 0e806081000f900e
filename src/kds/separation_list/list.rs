//! The separation list itself: its parts, its counters and the operations the engine calls.

use std::sync::atomic::AtomicU64;

use rayon::prelude::*;

use super::certificates::{Certificates, BATCH};
use super::hand_over::HandOver;
use super::hierarchy::Hierarchy;
use super::node_pairs::{has_self_pair, NodePairId, NodePairs, LIVE};
use super::strays::Strays;
use super::walk::{Frontier, NodeWalk};
use crate::kds::bvh::NodeId;
use crate::kds::kdop::Volume;
use crate::kds::leaves::Leaves;
use crate::penalty::PairKey;
use crate::profiling::zone;
use crate::state::VertexState;

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

/// The kinetic separation list over volumes of kind `V` (see the module docs).
#[derive(Debug)]
pub(crate) struct SeparationList<V> {
    pub(super) hierarchy: Hierarchy<V>,
    pub(super) pairs: NodePairs,
    pub(super) certificates: Certificates,
    walk: NodeWalk,
    hand_over: HandOver,
    strays: Strays<V>,
    /// The pairs of a batch to re-time or hand over (scratch).
    scratch_pairs: Vec<NodePairId>,
    /// See [`ListStats::pair_seconds`].
    pair_seconds: f64,
    /// See [`ListStats::retimes`].
    retimes: u64,
    /// See [`ListStats::short_circuit_retimes`].
    short_circuit_retimes: u64,
    /// See [`ListStats::trees`].
    trees: u64,
    /// Audit calls so far (see [`SeparationList::audit`]).
    pub(super) audits: AtomicU64,
}

/// Changed nodes whose pair lists are walked per rayon task after a refit (a node holds a few
/// to a few dozen pairs).
const WALK_TASK: usize = 32;

/// Changed nodes walked per group: each group's pairs are listed before they are re-timed.
const WALK_GROUP: usize = 1 << 12;

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
        let hierarchy = Hierarchy::new(leaves, state, eta1, slack);
        let nodes = hierarchy.bvh.len();
        Self {
            hierarchy,
            pairs: NodePairs::new(nodes),
            certificates: Certificates::new(eager),
            walk: NodeWalk::default(),
            hand_over: HandOver::default(),
            strays: Strays::new(state.len(), nodes),
            scratch_pairs: Vec::new(),
            pair_seconds: 0.0,
            retimes: 0,
            short_circuit_retimes: 0,
            trees: 0,
            audits: AtomicU64::new(0),
        }
    }

    /// Turns adaptive k-DOP axis ordering on or off (`speed.axis_ordering`; see
    /// [`AxisHint`](crate::kds::kdop::AxisHint)).
    pub(crate) fn set_adaptive_axes(&mut self, on: bool) {
        self.certificates.set_adaptive_axes(on);
        self.hierarchy.set_adaptive_axes(on);
    }

    /// The leaves and their topology.
    pub(crate) fn leaves(&self) -> &Leaves {
        &self.hierarchy.leaves
    }

    /// Counters.
    pub(crate) fn stats(&self) -> ListStats {
        let (apart, open, peak_pairs) = self.pairs.counts();
        ListStats {
            apart,
            open,
            peak_pairs,
            pair_seconds: self.pair_seconds,
            certificates: self.walk.certificates,
            descents: self.walk.descents,
            collapses: self.walk.collapses,
            retimes: self.retimes,
            leaf_refits: self.strays.leaf_refits,
            short_circuit_retimes: self.short_circuit_retimes,
            trees: self.trees,
        }
    }

    /// Leaf-node (bucket) volumes refitted so far after vertices strayed.
    pub(crate) fn leaf_refits(&self) -> u64 {
        self.strays.leaf_refits
    }

    /// Certificates queued now.
    pub(crate) fn certificates(&self) -> usize {
        self.certificates.len()
    }

    /// Heap bytes held (for the memory-per-vertex measurements).
    pub(crate) fn bytes(&self) -> usize {
        self.hierarchy.bytes()
            + self.pairs.bytes()
            + self.certificates.bytes()
            + self.strays.bytes()
            + self.hand_over.bytes()
    }

    /// The time of the next certificate failure (`now` while taken-back pairs wait to be
    /// collected, `+inf` if none).
    pub(crate) fn next_failure_time(&self) -> f64 {
        if self.hand_over.has_lost() {
            return self.certificates.now();
        }
        self.certificates.next_time().unwrap_or(f64::INFINITY)
    }

    /// Brings the list to `t`, counting the pair-seconds on the way.
    fn account(&mut self, t: f64) {
        let now = self.certificates.now();
        if t > now {
            self.pair_seconds += self.pairs.live() as f64 * (t - now);
            self.certificates.set_now(t);
        }
    }

    /// The walk's view of the list.
    fn frontier(&mut self) -> (&mut NodeWalk, Frontier<'_, V>) {
        let frontier = Frontier {
            pairs: &mut self.pairs,
            certificates: &mut self.certificates,
            hierarchy: &self.hierarchy,
            hand_over: &mut self.hand_over,
        };
        (&mut self.walk, frontier)
    }

    /// Processes every certificate due at or before `t`.
    fn process_due(&mut self, t: f64) {
        let (walk, mut frontier) = self.frontier();
        walk.process_due(&mut frontier, t);
    }

    /// Starts a new horizon `[t, t_end]` with reference slack `slack` (cm): every vertex's
    /// trajectory becomes its reference, every volume is refitted and every pair re-timed;
    /// calls `found` for the feature pairs of leaf pairs that open.
    pub(crate) fn rebuild(
        &mut self,
        state: &VertexState,
        t: f64,
        t_end: f64,
        slack: f64,
        found: &mut impl FnMut(PairKey),
    ) {
        self.account(t);
        self.hierarchy.slack = slack;
        self.certificates.set_t_end(t_end);
        self.hierarchy.refs.reset_all(state, t_end);
        self.hierarchy.refit_all((t, t_end));
        if self.hierarchy.is_loose() {
            self.replace_tree(state, t);
            self.hierarchy.refit_all((t, t_end));
        }
        if self.pairs.is_empty() {
            self.hierarchy.note_built();
        }
        self.certificates.set_rebuilding(true);
        let bvh = &self.hierarchy.bvh;
        if self.pairs.is_empty() && !bvh.is_empty() && has_self_pair(bvh, NodeId::ROOT) {
            let leaf_root = bvh.bucket(NodeId::ROOT).is_some();
            let root = self.pairs.alloc(NodeId::ROOT, NodeId::ROOT);
            self.pairs.open(root);
            if !leaf_root {
                let (walk, mut frontier) = self.frontier();
                walk.descend_children(&mut frontier, root, t);
            }
        }
        // Every live pair is re-timed, then every open leaf pair hands over, in pair order; a
        // batch of pair ids at a time, so that no list of all pairs is held.
        let count = self.pairs.len();
        let mut batch = std::mem::take(&mut self.scratch_pairs);
        for from in (0..count).step_by(BATCH) {
            batch.clear();
            let ids = self.pairs.ids_in(from..(from + BATCH).min(count));
            batch.extend(ids.filter(|&p| self.pairs.is(p, LIVE)));
            let bvh = &self.hierarchy.bvh;
            (self.certificates).schedule_batch(&mut self.pairs, bvh, &batch, t);
        }
        self.process_due(t);
        debug_assert!(self.hand_over.none_opened());
        self.certificates.set_rebuilding(false);
        let span = self.certificates.span();
        for from in (0..count).step_by(BATCH) {
            batch.clear();
            let (pairs, bvh) = (&self.pairs, &self.hierarchy.bvh);
            let ids = pairs.ids_in(from..(from + BATCH).min(count));
            batch.extend(ids.filter(|&p| pairs.is_open(p) && pairs.is_leaf_pair(p, bvh)));
            HandOver::hand_over(&self.hierarchy, pairs, span, &batch, found);
        }
        self.scratch_pairs = batch;
    }

    /// Replaces the hierarchy by one built over the leaves at `t` and empties the list, whose
    /// pairs name the old nodes; the rebuild that follows starts again from the root's pair.
    fn replace_tree(&mut self, state: &VertexState, t: f64) {
        // The old list and hierarchy go first, so that the process never holds two.
        self.pairs.forget();
        self.certificates.clear();
        self.hierarchy.replace(state, t);
        let nodes = self.hierarchy.bvh.len();
        self.pairs.set_nodes(nodes);
        self.strays.set_nodes(nodes);
        self.hand_over.clear_lost();
        self.trees += 1;
    }

    /// After the velocities of `vertices` (the engine's vertex indices) changed at `t`:
    /// refits the leaves of the vertices that left their reference paths, re-times the pairs of
    /// the changed nodes and processes what is due now, calling `found` for feature pairs
    /// handed over.
    pub(crate) fn update(
        &mut self,
        state: &VertexState,
        t: f64,
        vertices: &[u32],
        found: &mut impl FnMut(PairKey),
    ) {
        self.account(t);
        let span = self.certificates.span();
        if !(self.strays).refit(&mut self.hierarchy, state, vertices, (t, span.1)) {
            return;
        }
        self.retime_changed(t);
        self.process_due(t);
        (self.hand_over).hand_over_opened(&self.hierarchy, &self.pairs, span, found);
        let (hierarchy, pairs, strays) = (&self.hierarchy, &self.pairs, &self.strays);
        HandOver::hand_over_again(hierarchy, pairs, strays, span, strays.buckets(), found);
    }

    /// Re-times the pairs of the nodes whose volumes changed in this update, at `t`. Their
    /// pair lists are walked in parallel, a group of nodes at a time, and the pairs re-timed in
    /// node order, a batch at a time: after a whole-mesh kick nearly every pair is, and a list
    /// of them all would be the largest array of the run.
    fn retime_changed(&mut self, t: f64) {
        let Self {
            hierarchy,
            pairs,
            certificates,
            strays,
            scratch_pairs,
            retimes,
            ..
        } = self;
        let mut batch = std::mem::take(scratch_pairs);
        batch.clear();
        let changed = |n| strays.refitted(n);
        for group in strays.changed().chunks(WALK_GROUP) {
            if group.len() < 2 * WALK_TASK {
                pairs.pairs_of(group, changed, &mut batch);
            } else {
                let shared = &*pairs;
                let lists: Vec<Vec<NodePairId>> = (group.par_chunks(WALK_TASK))
                    .map_init(
                        || zone!("list_task"),
                        |_, nodes| {
                            let mut list = Vec::new();
                            shared.pairs_of(nodes, changed, &mut list);
                            list
                        },
                    )
                    .collect();
                lists.iter().for_each(|list| batch.extend_from_slice(list));
            }
            if batch.len() >= BATCH {
                *retimes += batch.len() as u64;
                certificates.schedule_batch(pairs, &hierarchy.bvh, &batch, t);
                batch.clear();
            }
        }
        *retimes += batch.len() as u64;
        certificates.schedule_batch(pairs, &hierarchy.bvh, &batch, t);
        *scratch_pairs = batch;
    }

    /// At an all-vertex event at `t` (thesis §8.1): from now on no certificate is computed past
    /// `stop`, the next all-vertex event (`+inf`: never short-circuit), and the pairs whose
    /// certificates were cut short at this event are re-timed. Certificates due now are
    /// processed by the next [`advance`](Self::advance), at `t`.
    pub(crate) fn short_circuit(&mut self, t: f64, stop: f64) {
        self.account(t);
        let mut pairs = std::mem::take(&mut self.scratch_pairs);
        self.certificates
            .short_circuit(&mut self.pairs, stop, &mut pairs);
        self.short_circuit_retimes += pairs.len() as u64;
        let bvh = &self.hierarchy.bvh;
        (self.certificates).schedule_batch(&mut self.pairs, bvh, &pairs, t);
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
        let span = self.certificates.span();
        (self.hand_over).hand_over_opened(&self.hierarchy, &self.pairs, span, found);
        self.hand_over.give_back(lost);
    }

    /// Whether some open leaf pair holds `key` among its feature pairs now and the pair's
    /// primitives may come within `eta1` before the horizon's end.
    pub(crate) fn overlaps(&self, key: PairKey) -> bool {
        let span = self.certificates.span();
        HandOver::overlaps(&self.hierarchy, &self.pairs, span, key)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::kds::kdop::{Aabb, Dop18, Sphere};
    use glam::DVec3;

    /// Two parallel 4x4-vertex sheets `gap` apart in y, the upper one falling at `speed`.
    pub(in crate::kds::separation_list) fn two_sheets(
        gap: f64,
        speed: f64,
    ) -> (Leaves, VertexState) {
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
        list.rebuild(&state, 0.0, 1.0, 0.025, &mut |k| found.push(k));
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
        list.rebuild(&state, 0.0, 1.0, 0.025, &mut |k| found.push(k));
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
        list.rebuild(&state, 0.0, 1.0, 0.025, &mut |_| {});
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
        list.rebuild(&state, 1.0, 2.0, 0.025, &mut |k| found.push(k));
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
        fresh.rebuild(&state, 1.0, 2.0, 0.025, &mut |k| fresh_found.push(k));
        assert_eq!(found, fresh_found);
        let counts = |l: &SeparationList<Dop18>| (l.stats().apart, l.stats().open);
        assert_eq!(counts(&list), counts(&fresh));
        assert_eq!(list.hierarchy.bvh.spread(), fresh.hierarchy.bvh.spread());
        // Another rebuild with nothing moved keeps the new hierarchy.
        list.rebuild(&state, 2.0, 3.0, 0.025, &mut |_| {});
        assert_eq!(list.stats().trees, 1);
    }
}
