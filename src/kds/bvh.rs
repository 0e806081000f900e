//! One bounding volume hierarchy over every leaf of every object (thesis §5.3), so that
//! object-object and self contact are found by the same traversal.
//!
//! Built once, top down and deterministically: the leaves' centroids are split at the median
//! along the longest axis of their bounds (ties broken by leaf id). The topology never changes
//! afterwards; only the volumes are refitted, bottom up, from the leaves' reference trajectories
//! (see [`super::leaves`]).
//!
//! Nodes are a structure of arrays in pre-order (a parent's id is smaller than its children's),
//! so a reverse sweep over ids is a bottom-up pass: `child` and `parent` are read by the
//! traversals, `vol` by the overlap tests, and the two never need to share a cache line.

use glam::DVec3;
use rayon::prelude::*;

use super::kdop::Volume;
use super::leaves::{Leaves, References, NONE};

/// Leaves per rayon task when fitting all leaves.
const PAR_MIN_LEN: usize = 2048;

/// A bounding volume hierarchy with volumes of kind `V` (see the module docs).
#[derive(Debug)]
pub struct Bvh<V> {
    /// Children of an internal node; `[leaf, NONE]` for a leaf node.
    child: Vec<[u32; 2]>,
    /// Parent of each node (`NONE` for the root).
    parent: Vec<u32>,
    /// Volume of each node, valid from its last fit to the horizon's end.
    pub vol: Vec<V>,
    /// Leaf id -> its node.
    leaf_node: Vec<u32>,
}

impl<V: Volume> Bvh<V> {
    /// Builds the topology over leaves with these centroids. Volumes start empty-valued; call
    /// [`refit_all`](Self::refit_all) before use.
    pub fn build(centroids: &[DVec3], placeholder: V) -> Self {
        let n = centroids.len();
        let cap = (2 * n).saturating_sub(1);
        let mut bvh = Self {
            child: Vec::with_capacity(cap),
            parent: Vec::with_capacity(cap),
            vol: Vec::new(),
            leaf_node: vec![NONE; n],
        };
        if n > 0 {
            let mut ids: Vec<u32> = (0..n as u32).collect();
            bvh.split(&mut ids, centroids, NONE);
        }
        bvh.vol = vec![placeholder; bvh.child.len()];
        bvh
    }

    /// Appends the subtree over `ids` (pre-order) and returns its root.
    fn split(&mut self, ids: &mut [u32], centroids: &[DVec3], parent: u32) -> u32 {
        let node = self.child.len() as u32;
        self.parent.push(parent);
        if ids.len() == 1 {
            self.child.push([ids[0], NONE]);
            self.leaf_node[ids[0] as usize] = node;
            return node;
        }
        self.child.push([NONE, NONE]);
        let (lo, hi) = ids
            .iter()
            .fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(lo, hi), &i| {
                (lo.min(centroids[i as usize]), hi.max(centroids[i as usize]))
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
            centroids[a as usize][k]
                .total_cmp(&centroids[b as usize][k])
                .then(a.cmp(&b))
        });
        let (left, right) = ids.split_at_mut(mid);
        let l = self.split(left, centroids, node);
        let r = self.split(right, centroids, node);
        self.child[node as usize] = [l, r];
        node
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.child.len()
    }

    /// Whether the hierarchy has no node.
    pub fn is_empty(&self) -> bool {
        self.child.is_empty()
    }

    /// The leaf held by node `n`, if it is a leaf node.
    #[inline]
    pub fn leaf(&self, n: u32) -> Option<u32> {
        let [a, b] = self.child[n as usize];
        (b == NONE).then_some(a)
    }

    /// The children of internal node `n`.
    #[inline]
    pub fn children(&self, n: u32) -> [u32; 2] {
        self.child[n as usize]
    }

    /// The parent of node `n` (`NONE` for the root).
    #[inline]
    pub fn parent(&self, n: u32) -> u32 {
        self.parent[n as usize]
    }

    /// The node of leaf `l`.
    #[inline]
    pub fn leaf_node(&self, l: u32) -> u32 {
        self.leaf_node[l as usize]
    }

    /// Fits leaf `l`'s volume to its reference trajectories on `[t, t_end]`, grown by `pad`.
    pub fn fit_leaf(leaves: &Leaves, refs: &References, l: u32, t: f64, t_end: f64, pad: f64) -> V {
        let mut p0 = Vec::with_capacity(3);
        let mut p1 = Vec::with_capacity(3);
        refs.leaf_points(leaves, l, t, t_end, &mut p0, &mut p1);
        V::fit(&p0, &p1, t, t_end, pad)
    }

    /// The volume of internal node `n` from its children's, grown by `grow`.
    #[inline]
    fn merged(&self, n: u32, t: f64, t_end: f64, grow: f64) -> V {
        let [a, b] = self.child[n as usize];
        self.vol[a as usize]
            .union(&self.vol[b as usize], t, t_end)
            .inflate(grow)
    }

    /// Refits every volume on `[t, t_end]`: the leaves in parallel, then the internal nodes in
    /// one bottom-up sweep, each grown by `grow` (see [`refit_leaf`](Self::refit_leaf)). The
    /// result does not depend on the number of threads.
    pub fn refit_all(
        &mut self,
        leaves: &Leaves,
        refs: &References,
        (t, t_end): (f64, f64),
        pad: f64,
        grow: f64,
    ) {
        let fitted: Vec<V> = (0..leaves.len() as u32)
            .into_par_iter()
            .with_min_len(PAR_MIN_LEN)
            .map(|l| Self::fit_leaf(leaves, refs, l, t, t_end, pad))
            .collect();
        for (l, v) in fitted.into_iter().enumerate() {
            self.vol[self.leaf_node[l] as usize] = v;
        }
        for n in (0..self.child.len()).rev() {
            if self.child[n][1] != NONE {
                self.vol[n] = self.merged(n as u32, t, t_end, grow);
            }
        }
    }

    /// Refits leaf `l` on `[t, t_end] = span` and its ancestors until one still contains its
    /// refitted child; calls `changed` for every node whose volume changed (the leaf's first).
    /// Internal nodes are grown by `grow` when refitted, so that the next small change of a
    /// child stays inside and costs no re-timing above it.
    pub fn refit_leaf(
        &mut self,
        leaves: &Leaves,
        refs: &References,
        l: u32,
        (t, t_end): (f64, f64),
        (pad, grow): (f64, f64),
        changed: &mut impl FnMut(u32),
    ) {
        let mut n = self.leaf_node[l as usize];
        self.vol[n as usize] = Self::fit_leaf(leaves, refs, l, t, t_end, pad);
        changed(n);
        loop {
            let p = self.parent[n as usize];
            if p == NONE || self.vol[p as usize].contains(&self.vol[n as usize], t, t_end) {
                return;
            }
            self.vol[p as usize] = self.merged(p, t, t_end, grow);
            changed(p);
            n = p;
        }
    }

    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.child.capacity() * 8
            + self.parent.capacity() * 4
            + self.vol.capacity() * std::mem::size_of::<V>()
            + self.leaf_node.capacity() * 4
    }

    /// Checks that every internal node contains its children at `t` (for `--audit`).
    pub fn validate(&self, t: f64, t_end: f64) -> Result<(), String> {
        for n in 0..self.child.len() {
            let [a, b] = self.child[n];
            if b == NONE {
                continue;
            }
            for c in [a, b] {
                if !self.vol[n].contains(&self.vol[c as usize], t, t_end) {
                    return Err(format!(
                        "broad-phase node {n} does not contain its child {c} at t = {t}"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kds::kdop::Dop18;

    #[test]
    fn build_is_balanced_and_pre_ordered() {
        let centroids: Vec<DVec3> = (0..100)
            .map(|i| DVec3::new((i % 10) as f64, (i / 10) as f64, 0.0))
            .collect();
        let placeholder = Dop18::fit(&[DVec3::ZERO], &[DVec3::ZERO], 0.0, 1.0, 0.0);
        let bvh = Bvh::build(&centroids, placeholder);
        assert_eq!(bvh.len(), 199);
        let mut depth = vec![0u32; bvh.len()];
        for n in 1..bvh.len() as u32 {
            let p = bvh.parent(n);
            assert!(p < n);
            depth[n as usize] = depth[p as usize] + 1;
        }
        assert!(depth.iter().max().copied().unwrap_or(0) <= 8);
        for l in 0..100 {
            assert_eq!(bvh.leaf(bvh.leaf_node(l)), Some(l));
        }
    }
}
