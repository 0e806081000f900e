//! One bounding volume hierarchy over every leaf of every object (thesis §5.3), so that
//! object-object and self contact are found by the same traversal.
//!
//! Built top down and deterministically: the leaves' centroids are split at the median
//! along the longest axis of their bounds (ties broken by leaf id) until at most `BUCKET`
//! leaves remain that are connected through shared vertices; those form one leaf node (a
//! *bucket*), whose volume bounds them all. Leaves of different objects, or of two layers of
//! one folded sheet, never share a bucket: a bucket's self pair stays open for good, so it must
//! hold only neighbours that are close anyway. Between
//! builds only the volumes are refitted, bottom up, from the leaves' reference trajectories (see
//! [`super::leaves`]); the separation list builds a new hierarchy when refits have let it grow
//! loose (`Bvh::spread`).
//!
//! Buckets keep the separation list small: a fine mesh's neighbouring triangles always overlap,
//! so with one triangle per leaf node every vertex kept about 42 node pairs open or pending; a
//! bucket of four neighbours holds those pairs inside one node (see `benches/README.md`).
//!
//! Nodes are a structure of arrays in pre-order (a parent's id is smaller than its children's),
//! so a reverse sweep over ids is a bottom-up pass: `child` and `parent` are read by the
//! traversals, `vol` by the overlap tests, and the two never need to share a cache line.

use glam::DVec3;
use rayon::prelude::*;

use super::kdop::Volume;
use super::leaves::{LeafId, Leaves, References};
use crate::profiling::zone;
use crate::state::VertexState;
use crate::typed_index::typed_index;

typed_index! {
    /// A node of a [`Bvh`], numbered in pre-order: the root is 0 and a parent's id is smaller
    /// than its children's.
    pub(crate) struct NodeId;
}

impl NodeId {
    /// The root.
    pub(crate) const ROOT: Self = Self::new(0);
    /// The parent of the root.
    const NONE: Self = Self::new(u32::MAX);
}

/// Leaf nodes per rayon task when fitting all leaf nodes.
const PAR_MIN_LEN: usize = 512;

/// Buckets placed, at least, for [`Bvh::place_buckets`] to place them on the pool.
const PAR_PLACE: usize = 2048;

/// Subtrees [`Bvh::place_buckets`] splits the placing of many buckets over.
const PLACE_SUBTREES: usize = 64;

/// Most leaves per leaf node (see the module docs).
pub(crate) const BUCKET: usize = super::leaves::MAX_GROUP;

/// Tags the second child slot of a leaf node, whose slots hold the range of its leaves in
/// `Bvh::order`.
const LEAF_NODE: u32 = 1 << 31;

/// A bounding volume hierarchy with volumes of kind `V` (see the module docs).
#[derive(Debug)]
pub(crate) struct Bvh<V> {
    /// Children of an internal node (node ids); `[start, end | LEAF_NODE]` for a leaf node,
    /// whose leaves are `order[start..end]`.
    child: Vec<[u32; 2]>,
    /// Leaf ids grouped by leaf node, in node order.
    order: Vec<LeafId>,
    /// Parent of each node (`NodeId::NONE` for the root).
    parent: Vec<NodeId>,
    /// Volume of each node, valid from its last fit to the horizon's end.
    pub(crate) vol: Vec<V>,
    /// Leaf id -> its leaf node.
    leaf_node: Vec<NodeId>,
}

impl<V> Bvh<V> {
    /// Number of nodes.
    pub(crate) fn len(&self) -> usize {
        self.child.len()
    }

    /// Whether the hierarchy has no node.
    pub(crate) fn is_empty(&self) -> bool {
        self.child.is_empty()
    }

    /// Every node, in pre-order.
    pub(crate) fn ids(&self) -> impl DoubleEndedIterator<Item = NodeId> {
        (0..self.len()).map(NodeId::from_usize)
    }

    /// The leaves held by node `n`, if it is a leaf node (a bucket).
    #[inline]
    pub(crate) fn bucket(&self, n: NodeId) -> Option<&[LeafId]> {
        let [a, b] = self.child[n.index()];
        (b & LEAF_NODE != 0).then(|| &self.order[a as usize..(b & !LEAF_NODE) as usize])
    }

    /// The children of internal node `n`.
    #[inline]
    pub(crate) fn children(&self, n: NodeId) -> [NodeId; 2] {
        self.child[n.index()].map(NodeId::new)
    }

    /// The parent of node `n` (`None` for the root).
    #[inline]
    pub(crate) fn parent(&self, n: NodeId) -> Option<NodeId> {
        let p = self.parent[n.index()];
        (p != NodeId::NONE).then_some(p)
    }

    /// The leaf node holding leaf `l`.
    #[inline]
    pub(crate) fn leaf_node(&self, l: LeafId) -> NodeId {
        self.leaf_node[l.index()]
    }

    /// Node `n`'s volume.
    #[inline]
    pub(crate) fn volume(&self, n: NodeId) -> &V {
        &self.vol[n.index()]
    }
}

impl<V: Volume> Bvh<V> {
    /// Builds the topology over the leaves' centroids at `t` (`Bvh::build`).
    pub(crate) fn over(leaves: &Leaves, state: &VertexState, t: f64) -> Self {
        let centroids: Vec<_> = (leaves.ids())
            .map(|l| leaves.centroid(l, state, t))
            .collect();
        Self::build(
            &centroids,
            |a, b| leaves.adjacent(a, b),
            Self::placeholder(),
        )
    }

    /// The volume a new hierarchy's nodes hold until they are fitted.
    pub(crate) fn placeholder() -> V {
        V::fit(&[DVec3::ZERO], &[DVec3::ZERO], 0.0, 0.0, 0.0)
    }

    /// Builds the topology over leaves with these centroids; `adjacent(a, b)` says whether
    /// leaves `a` and `b` share a vertex. Volumes start as `placeholder`; call
    /// [`refit_all`](Self::refit_all) before use.
    pub(crate) fn build(
        centroids: &[DVec3],
        adjacent: impl Fn(LeafId, LeafId) -> bool,
        placeholder: V,
    ) -> Self {
        let n = centroids.len();
        let cap = (2 * n).saturating_sub(1);
        let mut bvh = Self {
            child: Vec::with_capacity(cap),
            parent: Vec::with_capacity(cap),
            order: (0..n).map(LeafId::from_usize).collect(),
            vol: Vec::new(),
            leaf_node: vec![NodeId::NONE; n],
        };
        if n > 0 {
            let mut ids = std::mem::take(&mut bvh.order);
            bvh.split(&mut ids, 0, centroids, &adjacent, NodeId::NONE);
            bvh.order = ids;
        }
        bvh.vol = vec![placeholder; bvh.child.len()];
        bvh
    }

    /// Appends the subtree over `ids`, which sit at `start` in the final leaf order
    /// (pre-order), and returns its root.
    fn split(
        &mut self,
        ids: &mut [LeafId],
        start: usize,
        centroids: &[DVec3],
        adjacent: &impl Fn(LeafId, LeafId) -> bool,
        parent: NodeId,
    ) -> NodeId {
        let node = NodeId::from_usize(self.child.len());
        self.parent.push(parent);
        if ids.len() == 1 || (ids.len() <= BUCKET && connected(ids, adjacent)) {
            ids.sort_unstable();
            let end = u32::try_from(start + ids.len()).expect("fewer than 2^31 leaves");
            self.child.push([start as u32, end | LEAF_NODE]);
            for &l in ids.iter() {
                self.leaf_node[l.index()] = node;
            }
            return node;
        }
        self.child.push([NodeId::NONE.get(); 2]);
        let centroid = |l: LeafId| centroids[l.index()];
        let (lo, hi) = ids
            .iter()
            .fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(lo, hi), &i| {
                (lo.min(centroid(i)), hi.max(centroid(i)))
            });
        let extent = hi - lo;
        let k = if extent.x >= extent.y && extent.x >= extent.z {
            0
        } else if extent.y >= extent.z {
            1
        } else {
            2
        };
        let mid = ids.len() / 2;
        ids.select_nth_unstable_by(mid, |&a, &b| {
            centroid(a)[k].total_cmp(&centroid(b)[k]).then(a.cmp(&b))
        });
        let (left, right) = ids.split_at_mut(mid);
        let l = self.split(left, start, centroids, adjacent, node);
        let r = self.split(right, start + mid, centroids, adjacent, node);
        self.child[node.index()] = [l.get(), r.get()];
        node
    }

    /// Fits a volume to the reference trajectories of `ls`' vertices on `[t, t_end]`, grown by
    /// `pad`.
    pub(crate) fn fit_leaves(
        leaves: &Leaves,
        refs: &References,
        ls: &[LeafId],
        t: f64,
        t_end: f64,
        pad: f64,
    ) -> V {
        let mut p0 = Vec::with_capacity(3 * ls.len());
        let mut p1 = Vec::with_capacity(3 * ls.len());
        for &l in ls {
            refs.leaf_points(leaves, l, t, t_end, &mut p0, &mut p1);
        }
        V::fit(&p0, &p1, t, t_end, pad)
    }

    /// Fits leaf node `n`'s volume from its leaves (see [`fit_leaves`](Self::fit_leaves)).
    pub(crate) fn fit_bucket(
        &self,
        leaves: &Leaves,
        refs: &References,
        n: NodeId,
        span: (f64, f64),
        pad: f64,
    ) -> V {
        let bucket = self.bucket(n).expect("a leaf node");
        Self::fit_leaves(leaves, refs, bucket, span.0, span.1, pad)
    }

    /// The volume of internal node `n` from its children's, grown by `grow`.
    #[inline]
    fn merged(&self, n: NodeId, t: f64, t_end: f64, grow: f64) -> V {
        let [a, b] = self.children(n);
        merge(self.volume(a), self.volume(b), (t, t_end), grow)
    }

    /// Refits every volume on `[t, t_end]`, bottom up, each internal node grown by `grow` (see
    /// `place_bucket`): the subtrees below the top levels in parallel, each in one reverse
    /// sweep over its ids (pre-order keeps a subtree's ids contiguous), then the few nodes
    /// above them. Every volume is computed from the same children whatever
    /// the order, so the result does not depend on the number of threads.
    pub(crate) fn refit_all(
        &mut self,
        leaves: &Leaves,
        refs: &References,
        (t, t_end): (f64, f64),
        pad: f64,
        grow: f64,
    ) {
        let subtrees = self.subtrees(self.len().div_ceil(PAR_MIN_LEN));
        let mut vol = std::mem::take(&mut self.vol);
        let mut parts = carve(&mut vol, &subtrees);
        let this = &*self;
        let refit = |first: usize, part: &mut [V]| {
            for n in (first..first + part.len()).rev() {
                let node = NodeId::from_usize(n);
                part[n - first] = match this.bucket(node) {
                    Some(_) => this.fit_bucket(leaves, refs, node, (t, t_end), pad),
                    None => {
                        let [a, b] = this.children(node).map(|c| &part[c.index() - first]);
                        merge(a, b, (t, t_end), grow)
                    }
                };
            }
        };
        match &mut parts[..] {
            [(first, part)] => refit(*first, part),
            parts => parts.par_iter_mut().for_each_init(
                || zone!("list_task"),
                |_, (first, part)| refit(*first, part),
            ),
        }
        self.vol = vol;
        // The ancestors, bottom up: every node between two subtrees' ranges, and before the
        // first.
        let mut below = self.len();
        for &(first, end) in subtrees.iter().rev().chain([&(0, 0)]) {
            for n in (end..below).rev().map(NodeId::from_usize) {
                self.vol[n.index()] = self.merged(n, t, t_end, grow);
            }
            below = first;
        }
    }

    /// At least `count` subtrees (fewer only if the hierarchy has fewer leaf nodes) that cover
    /// every node but a few top ones, as ascending `(root, end)` ranges of node indices: the
    /// nodes of the shallowest level that has `count` of them, with the leaf nodes above that
    /// level as subtrees of their own.
    fn subtrees(&self, count: usize) -> Vec<(usize, usize)> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut roots = vec![NodeId::ROOT];
        while roots.len() < count {
            let mut deeper = Vec::with_capacity(2 * roots.len());
            for &n in &roots {
                match self.bucket(n) {
                    Some(_) => deeper.push(n),
                    None => deeper.extend(self.children(n)),
                }
            }
            if deeper.len() == roots.len() {
                break;
            }
            roots = deeper;
        }
        let end = |mut n: NodeId| {
            // A subtree ends where the subtree of its last (rightmost) descendant ends.
            while self.bucket(n).is_none() {
                n = self.children(n)[1];
            }
            n.index() + 1
        };
        roots.iter().map(|&n| (n.index(), end(n))).collect()
    }

    /// Gives node `n` the volume `vol` (a bucket's [`fit_bucket`](Self::fit_bucket) on
    /// `[t, t_end]`, or a subtree root's volume that [`place_buckets`](Self::place_buckets)
    /// replays) and refits its ancestors until one still contains its refitted child;
    /// calls `changed` for every ancestor whose volume changed, nearest first. Internal nodes
    /// are grown by `grow` when refitted, so that the next small change of a child stays inside
    /// and costs no re-timing above it.
    pub(crate) fn place_bucket(
        &mut self,
        mut n: NodeId,
        vol: V,
        (t, t_end): (f64, f64),
        grow: f64,
        changed: &mut impl FnMut(NodeId),
    ) {
        self.vol[n.index()] = vol;
        while let Some(p) = self.parent(n) {
            if self.volume(p).contains(self.volume(n), t, t_end) {
                return;
            }
            self.vol[p.index()] = self.merged(p, t, t_end, grow);
            changed(p);
            n = p;
        }
    }

    /// Places the buckets `buckets[i]` with the volumes `vols[i]` in turn, as
    /// [`place_bucket`](Self::place_bucket) called for each in order would, calling
    /// `visit(n, false)` for each bucket as it is placed and `visit(p, true)` for each ancestor
    /// whose volume changed, in that same order.
    ///
    /// Many buckets (a whole-mesh kick refits nearly all of them) are placed on the pool, with
    /// the same volumes and the same visits: each subtree below the top levels places its own
    /// buckets in turn, noting the ancestors it changed and, each time a walk reached its
    /// root, the root's volume then; the top levels then replay those roots in the buckets'
    /// order. A walk leaves a subtree only through its root, so the top sees every root's
    /// volume change in the order one pass makes them.
    pub(crate) fn place_buckets(
        &mut self,
        buckets: &[NodeId],
        vols: &[V],
        span: (f64, f64),
        grow: f64,
        visit: &mut impl FnMut(NodeId, bool),
    ) {
        debug_assert_eq!(buckets.len(), vols.len());
        if buckets.len() < PAR_PLACE {
            for (&n, &vol) in buckets.iter().zip(vols) {
                visit(n, false);
                self.place_bucket(n, vol, span, grow, &mut |p| visit(p, true));
            }
            return;
        }
        let subtrees = self.subtrees(PLACE_SUBTREES);
        // The ranges are ascending and hold every leaf node: a bucket's is the last one
        // starting at or before it.
        let home: Vec<usize> = (buckets.iter())
            .map(|&n| subtrees.partition_point(|&(root, _)| root <= n.index()) - 1)
            .collect();
        let mut placed: Vec<Vec<usize>> = vec![Vec::new(); subtrees.len()];
        for (i, &s) in home.iter().enumerate() {
            placed[s].push(i);
        }
        let roots_before: Vec<V> = subtrees.iter().map(|&(root, _)| self.vol[root]).collect();
        let walks = self.walk_subtrees(&subtrees, &placed, buckets, vols, span, grow);
        // The top levels, in the buckets' order, from the roots' volumes before the first.
        for (&(root, _), &before) in subtrees.iter().zip(&roots_before) {
            self.vol[root] = before;
        }
        let mut cursors = vec![Cursor::default(); subtrees.len()];
        for (&n, &s) in buckets.iter().zip(&home) {
            let (walks, at) = (&walks[s], &mut cursors[s]);
            let (end, escaped) = walks.ends[at.bucket];
            visit(n, false);
            for &p in &walks.changed[at.changed..end] {
                visit(p, true);
            }
            (at.bucket, at.changed) = (at.bucket + 1, end);
            if escaped {
                let root = NodeId::from_usize(subtrees[s].0);
                self.place_bucket(root, walks.roots[at.root], span, grow, &mut |p| {
                    visit(p, true)
                });
                at.root += 1;
            }
        }
    }

    /// The subtrees' part of [`place_buckets`](Self::place_buckets), on the pool: each subtree
    /// places the buckets `placed` lists for it (indices into `buckets` and `vols`), in turn,
    /// walking up no further than its root.
    fn walk_subtrees(
        &mut self,
        subtrees: &[(usize, usize)],
        placed: &[Vec<usize>],
        buckets: &[NodeId],
        vols: &[V],
        span: (f64, f64),
        grow: f64,
    ) -> Vec<SubtreeWalks<V>> {
        let mut vol = std::mem::take(&mut self.vol);
        let mut parts = carve(&mut vol, subtrees);
        let this = &*self;
        let walks = (parts.par_iter_mut().zip(placed))
            .map_init(
                || zone!("list_task"),
                |_, ((root, part), placed)| {
                    let root = *root;
                    let mut walks = SubtreeWalks::default();
                    for &i in placed {
                        let mut n = buckets[i];
                        part[n.index() - root] = vols[i];
                        let escaped = loop {
                            if n.index() == root {
                                walks.roots.push(part[0]);
                                break true;
                            }
                            let p = this.parent[n.index()];
                            let inner = &part[n.index() - root];
                            if part[p.index() - root].contains(inner, span.0, span.1) {
                                break false;
                            }
                            let [a, b] = this.children(p).map(|c| &part[c.index() - root]);
                            part[p.index() - root] = merge(a, b, span, grow);
                            walks.changed.push(p);
                            n = p;
                        };
                        walks.ends.push((walks.changed.len(), escaped));
                    }
                    walks
                },
            )
            .collect();
        self.vol = vol;
        walks
    }

    /// The summed [`Volume::size`] of the internal nodes: it grows as leaves that were built
    /// into one subtree drift apart (particles scattering), which a refit cannot undo.
    pub(crate) fn spread(&self) -> f64 {
        (self.ids())
            .filter(|&n| self.bucket(n).is_none())
            .map(|n| self.volume(n).size())
            .sum()
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.child.capacity() * 8
            + (self.parent.capacity() + self.order.capacity()) * 4
            + self.vol.capacity() * std::mem::size_of::<V>()
            + self.leaf_node.capacity() * 4
    }

    /// Checks that every internal node contains its children at `t` (for `--audit`).
    pub(crate) fn validate(&self, t: f64, t_end: f64) -> Result<(), String> {
        for n in self.ids().filter(|&n| self.bucket(n).is_none()) {
            for c in self.children(n) {
                if !self.volume(n).contains(self.volume(c), t, t_end) {
                    return Err(format!(
                        "broad-phase node {n} does not contain its child {c} at t = {t}"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// What one subtree's part of [`Bvh::place_buckets`] did, bucket by bucket.
#[derive(Debug)]
struct SubtreeWalks<V> {
    /// The ancestors inside the subtree whose volumes changed, in order.
    changed: Vec<NodeId>,
    /// Per bucket placed: the end of its ancestors in `changed`, and whether its walk reached
    /// the subtree's root (and may go on above it).
    ends: Vec<(usize, bool)>,
    /// The root's volume after each walk that reached it.
    roots: Vec<V>,
}

impl<V> Default for SubtreeWalks<V> {
    fn default() -> Self {
        Self {
            changed: Vec::new(),
            ends: Vec::new(),
            roots: Vec::new(),
        }
    }
}

/// How far [`Bvh::place_buckets`] has replayed one subtree's [`SubtreeWalks`].
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    bucket: usize,
    changed: usize,
    root: usize,
}

/// The subtrees' ranges `(root, end)` (ascending, disjoint) carved out of the volumes, each
/// with its root; the nodes between them, their ancestors, are left out.
fn carve<'a, V>(vol: &'a mut [V], subtrees: &[(usize, usize)]) -> Vec<(usize, &'a mut [V])> {
    let mut parts = Vec::with_capacity(subtrees.len());
    let mut rest = vol;
    let mut at = 0;
    for &(root, end) in subtrees {
        let (_, after) = std::mem::take(&mut rest).split_at_mut(root - at);
        let (part, after) = after.split_at_mut(end - root);
        parts.push((root, part));
        (rest, at) = (after, end);
    }
    parts
}

/// The volume of an internal node whose children have volumes `a` and `b`, grown by `grow`.
#[inline]
fn merge<V: Volume>(a: &V, b: &V, (t, t_end): (f64, f64), grow: f64) -> V {
    a.union(b, t, t_end).inflate(grow)
}

/// Whether the few leaves `ids` form one group through `adjacent` links.
fn connected(ids: &[LeafId], adjacent: &impl Fn(LeafId, LeafId) -> bool) -> bool {
    let mut reached = 1usize; // bit i: ids[i] is reached from ids[0]
    loop {
        let before = reached;
        for i in 0..ids.len() {
            if reached & (1 << i) == 0 {
                continue;
            }
            for j in 0..ids.len() {
                if adjacent(ids[i], ids[j]) {
                    reached |= 1 << j;
                }
            }
        }
        if reached == before {
            return reached == (1 << ids.len()) - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kds::kdop::Dop18;
    use crate::test_rng::Rng;

    #[test]
    fn build_is_balanced_pre_ordered_and_buckets_only_neighbours() {
        let centroids: Vec<DVec3> = (0..100)
            .map(|i| DVec3::new((i % 10) as f64, (i / 10) as f64, 0.0))
            .collect();
        let placeholder = Dop18::fit(&[DVec3::ZERO], &[DVec3::ZERO], 0.0, 1.0, 0.0);
        // Grid neighbours are adjacent.
        let at = |l: LeafId| centroids[l.index()];
        let grid = |a: LeafId, b: LeafId| at(a).distance(at(b)) == 1.0;
        let bvh = Bvh::build(&centroids, grid, placeholder);
        let mut depth = vec![0u32; bvh.len()];
        for n in bvh.ids().skip(1) {
            let p = bvh.parent(n).expect("not the root");
            assert!(p < n);
            depth[n.index()] = depth[p.index()] + 1;
        }
        assert!(depth.iter().max().copied().unwrap_or(0) <= 7);
        assert_eq!(bvh.parent(NodeId::ROOT), None);
        let mut held = 0;
        let leaf_nodes: Vec<NodeId> = bvh.ids().filter(|&n| bvh.bucket(n).is_some()).collect();
        for &n in &leaf_nodes {
            let bucket = bvh.bucket(n).unwrap();
            held += bucket.len();
            assert!((1..=BUCKET).contains(&bucket.len()));
            for &l in bucket {
                assert_eq!(bvh.leaf_node(l), n);
                assert!(bucket.len() == 1 || bucket.iter().any(|&m| grid(l, m)));
            }
        }
        assert_eq!(held, 100);
        // At most half as many leaf nodes as leaves (one per leaf without buckets).
        assert!(leaf_nodes.len() <= 50, "{} buckets", leaf_nodes.len());
        // The subtrees the refit runs in parallel: whole subtrees, in order, and only
        // ancestors of theirs outside them.
        for count in [1, 2, 5, 16, 1000] {
            let subtrees = bvh.subtrees(count);
            assert!(subtrees.len() >= count.min(leaf_nodes.len()), "{count}");
            let mut covered = vec![false; bvh.len()];
            let mut last_end = 0;
            for &(root, end) in &subtrees {
                assert!(last_end <= root && root < end, "{count}: {subtrees:?}");
                last_end = end;
                covered[root..end].fill(true);
                for n in (root..end).map(NodeId::from_usize) {
                    let mut a = n;
                    while a.index() != root {
                        a = bvh.parent(a).expect("below the root");
                        assert!(
                            a.index() >= root,
                            "{count}: node {n} outside {root}'s subtree"
                        );
                    }
                }
                // The next node after the range is not in the subtree.
                if end < bvh.len() {
                    let mut a = Some(NodeId::from_usize(end));
                    while let Some(n) = a.filter(|n| n.index() != root) {
                        a = bvh.parent(n);
                    }
                    assert_eq!(a, None, "{count}: node {end} belongs to {root}'s subtree");
                }
            }
            for n in bvh.ids().filter(|&n| !covered[n.index()]) {
                assert!(bvh.bucket(n).is_none(), "{count}: leaf node {n} left out");
            }
        }
        // With no adjacency every leaf is its own bucket: 199 nodes.
        let apart = Bvh::build(&centroids, |_, _| false, placeholder);
        assert_eq!(apart.len(), 199);
        assert!((0..100)
            .map(LeafId::new)
            .all(|l| apart.bucket(apart.leaf_node(l)) == Some(&[l][..])));
    }

    /// A hierarchy over `n` scattered leaves, one a bucket, each fitted around its centroid
    /// and every internal node merged from its children.
    fn scattered(n: usize, rng: &mut Rng) -> (Bvh<Dop18>, Vec<DVec3>) {
        let centroids: Vec<DVec3> = (0..n).map(|_| rng.vec(100.0)).collect();
        let fit = |c: DVec3| Dop18::fit(&[c], &[c + DVec3::X], 0.0, 1.0, 0.5);
        let mut bvh = Bvh::build(&centroids, |_, _| false, fit(DVec3::ZERO));
        for node in bvh.ids().rev() {
            bvh.vol[node.index()] = match bvh.bucket(node) {
                Some(&[l]) => fit(centroids[l.index()]),
                _ => bvh.merged(node, 0.0, 1.0, 0.1),
            };
        }
        (bvh, centroids)
    }

    #[test]
    fn buckets_placed_on_any_pool_match_placing_them_one_by_one() {
        let mut rng = Rng(5);
        let n = 6000;
        // Most buckets move a little (staying inside their parents), some far (their walks
        // reach the top), in a shuffled order, with some left out.
        let (_, centroids) = scattered(n, &mut rng);
        let mut moved: Vec<(LeafId, Dop18)> = Vec::new();
        for (l, &centroid) in centroids.iter().enumerate() {
            let jump = match rng.uniform(0.0, 1.0) {
                u if u < 0.1 => continue,
                u if u < 0.8 => 0.01,
                _ => 30.0,
            };
            let c = centroid + rng.vec(jump);
            moved.push((
                LeafId::from_usize(l),
                Dop18::fit(&[c], &[c + rng.vec(2.0)], 0.0, 1.0, 0.5),
            ));
        }
        for i in (1..moved.len()).rev() {
            moved.swap(i, rng.next_u64() as usize % (i + 1));
        }
        let run = |threads: usize| {
            let (mut bvh, _) = scattered(n, &mut Rng(5));
            let buckets: Vec<NodeId> = moved.iter().map(|&(l, _)| bvh.leaf_node(l)).collect();
            let vols: Vec<Dop18> = moved.iter().map(|&(_, v)| v).collect();
            let mut visits = Vec::new();
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                bvh.place_buckets(&buckets, &vols, (0.0, 1.0), 0.1, &mut |n, a| {
                    visits.push((n, a))
                })
            });
            (bvh.vol, visits)
        };
        let (mut bvh, _) = scattered(n, &mut Rng(5));
        let mut visits = Vec::new();
        for &(l, vol) in &moved {
            let node = bvh.leaf_node(l);
            visits.push((node, false));
            bvh.place_bucket(node, vol, (0.0, 1.0), 0.1, &mut |p| visits.push((p, true)));
        }
        // The far moves changed the top: the walks did leave their subtrees.
        let subtrees = bvh.subtrees(PLACE_SUBTREES);
        let above =
            |p: NodeId| !(subtrees.iter()).any(|&(root, end)| (root..end).contains(&p.index()));
        assert!(
            visits.iter().any(|&(p, a)| a && above(p)),
            "no walk reached the top"
        );
        for threads in [1, 2, 3, 5] {
            let (vol, got) = run(threads);
            assert!(vol == bvh.vol, "{threads} threads: other volumes");
            assert!(got == visits, "{threads} threads: other visits");
        }
    }
}
