//! The contingency of a separation list (see the parent module's docs): after a kick, the
//! vertices that strayed from their reference paths get new ones, and the buckets holding them
//! are refitted with the ancestors whose volumes no longer contain them.
//!
//! Each update is an *epoch*: a vertex given a new reference and a node whose volume changed
//! are stamped with it, so the hand-over and the re-timing that follow can tell them apart in
//! O(1). The lists of one update (leaves, buckets, their fitted volumes, changed nodes) are
//! kept between updates, as scratch.

use rayon::prelude::*;

use super::hierarchy::Hierarchy;
use crate::kds::bvh::NodeId;
use crate::kds::kdop::Volume;
use crate::kds::leaves::{LeafId, Leaves};
use crate::kds::PAR_MIN_LEN;
use crate::profiling::zone;
use crate::state::{VertexId, VertexState};

/// Fewest buckets fitted per rayon task (a bucket's fit takes about a microsecond).
const REFIT_TASK: usize = 32;

/// Buckets refitted per batch of an update: their volumes are fitted in parallel and held
/// until placed (a few megabytes of 18-DOPs), enough for the placing to go on the pool.
const REFIT_BATCH: usize = 1 << 14;

/// The stamps and lists of the refits of one update (see the module docs).
#[derive(Debug)]
pub(super) struct Strays<V> {
    /// Per vertex: the epoch that last reset its reference.
    vertex_stamp: Vec<u32>,
    /// Per node: the epoch that last changed its volume.
    node_stamp: Vec<u32>,
    epoch: u32,
    /// One bit a leaf, all clear between updates (see [`leaves_of`](Self::leaves_of)).
    leaf_bits: Vec<u64>,
    /// The leaves holding a vertex that strayed, ascending.
    dirty: Vec<LeafId>,
    /// Their buckets, in the order of their first leaves.
    buckets: Vec<NodeId>,
    /// The fitted volumes of a batch of buckets (at most [`REFIT_BATCH`]).
    fitted: Vec<V>,
    /// The buckets and the ancestors whose volumes changed, in the order they changed.
    changed: Vec<NodeId>,
    /// Buckets refitted so far.
    pub(super) leaf_refits: u64,
}

impl<V: Volume> Strays<V> {
    /// Stamps for `vertices` vertices and `nodes` nodes.
    pub(super) fn new(vertices: usize, nodes: usize) -> Self {
        Self {
            vertex_stamp: vec![0; vertices],
            node_stamp: vec![0; nodes],
            epoch: 0,
            leaf_bits: Vec::new(),
            dirty: Vec::new(),
            buckets: Vec::new(),
            fitted: Vec::new(),
            changed: Vec::new(),
            leaf_refits: 0,
        }
    }

    /// Starts the node stamps of a new hierarchy of `nodes` nodes.
    pub(super) fn set_nodes(&mut self, nodes: usize) {
        self.node_stamp = vec![0; nodes];
    }

    /// Whether node `n`'s volume changed in this update.
    #[inline]
    pub(super) fn refitted(&self, n: NodeId) -> bool {
        self.node_stamp[n.index()] == self.epoch
    }

    /// Whether vertex `v` got a new reference in this update.
    #[inline]
    pub(super) fn moved(&self, v: VertexId) -> bool {
        self.vertex_stamp[v.index()] == self.epoch
    }

    /// The buckets refitted in this update.
    pub(super) fn buckets(&self) -> &[NodeId] {
        &self.buckets
    }

    /// The nodes whose volumes changed in this update, in the order they changed.
    pub(super) fn changed(&self) -> &[NodeId] {
        &self.changed
    }

    /// A new update after the velocities of `vertices` (the engine's vertex indices) changed
    /// at `t`, in a horizon ending at `t_end`: the vertices that left their reference paths get
    /// new ones, and the buckets holding them are refitted and placed
    /// ([`Bvh::place_buckets`](crate::kds::bvh::Bvh::place_buckets)). Returns whether any
    /// was.
    pub(super) fn refit(
        &mut self,
        hierarchy: &mut Hierarchy<V>,
        state: &VertexState,
        vertices: &[u32],
        (t, t_end): (f64, f64),
    ) -> bool {
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.clear();
        self.epoch = self.epoch.wrapping_add(1);
        let (refs, slack) = (&hierarchy.refs, hierarchy.slack);
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
            hierarchy.refs.reset(v, state, t_end);
            self.vertex_stamp[v.index()] = self.epoch;
        }
        self.leaves_of(&hierarchy.leaves, &strayed, &mut dirty);
        let any = !dirty.is_empty();
        if any {
            self.place(hierarchy, &dirty, (t, t_end));
        }
        self.dirty = dirty;
        any
    }

    /// Refits the buckets of the leaves `dirty` and places them, noting the nodes that changed.
    fn place(&mut self, hierarchy: &mut Hierarchy<V>, dirty: &[LeafId], span: (f64, f64)) {
        let Self {
            node_stamp,
            epoch,
            buckets,
            fitted,
            changed,
            leaf_refits,
            ..
        } = self;
        let epoch = *epoch;
        changed.clear();
        buckets.clear();
        for &l in dirty {
            let node = hierarchy.bvh.leaf_node(l);
            // Listed once, for its first leaf.
            if std::mem::replace(&mut node_stamp[node.index()], epoch) != epoch {
                buckets.push(node);
            }
        }
        *leaf_refits += buckets.len() as u64;
        // The buckets' volumes are fitted in parallel, a batch at a time, then placed in list
        // order (on the pool when many): the same volumes and order as refitting each in turn.
        let (pad, grow) = (hierarchy.pad(), hierarchy.slack);
        for batch in buckets.chunks(REFIT_BATCH) {
            let Hierarchy {
                bvh, leaves, refs, ..
            } = &*hierarchy;
            (batch.par_iter().with_min_len(REFIT_TASK))
                .map_init(
                    || zone!("list_task"),
                    |_, &n| bvh.fit_bucket(leaves, refs, n, span, pad),
                )
                .collect_into_vec(fitted);
            (hierarchy.bvh).place_buckets(batch, fitted, span, grow, &mut |n, ancestor| {
                // A bucket is listed once; an ancestor the first time it changes.
                if !ancestor || node_stamp[n.index()] != epoch {
                    node_stamp[n.index()] = epoch;
                    changed.push(n);
                }
            });
        }
    }

    /// Sets `dirty` to the leaves holding any of `vertices`, ascending and without repeats.
    /// When many vertices strayed (a whole-mesh kick), they are marked in a bitset over the
    /// leaves and read back in order: listing each vertex's leaves before sorting would hold
    /// every leaf about six times (about 40 MB at 10^6 vertices).
    fn leaves_of(&mut self, leaves: &Leaves, vertices: &[VertexId], dirty: &mut Vec<LeafId>) {
        dirty.clear();
        if vertices.len() < leaves.len().div_ceil(64) {
            Self::leaves_sorted(leaves, vertices, dirty);
        } else {
            self.leaves_marked(leaves, vertices, dirty);
        }
    }

    /// [`leaves_of`](Self::leaves_of) for a few vertices: listed, sorted, deduplicated.
    fn leaves_sorted(leaves: &Leaves, vertices: &[VertexId], dirty: &mut Vec<LeafId>) {
        for &v in vertices {
            dirty.extend_from_slice(leaves.of_vertex(v));
        }
        dirty.sort_unstable();
        dirty.dedup();
    }

    /// [`leaves_of`](Self::leaves_of) for many vertices: marked in the bitset, read back in
    /// order, and the bitset cleared.
    fn leaves_marked(&mut self, leaves: &Leaves, vertices: &[VertexId], dirty: &mut Vec<LeafId>) {
        let bits = &mut self.leaf_bits;
        bits.resize(leaves.len().div_ceil(64), 0);
        for &v in vertices {
            for &l in leaves.of_vertex(v) {
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

    /// Heap bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.node_stamp.capacity() * 4 + self.fitted.capacity() * std::mem::size_of::<V>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kds::kdop::Dop18;
    use crate::kds::separation_list::list::tests::two_sheets;

    #[test]
    fn the_leaves_of_many_vertices_come_from_the_bitset_in_the_same_order() {
        let (leaves, _) = two_sheets(3.0, 0.0);
        let mut strays = Strays::<Dop18>::new(32, 0);
        let sorted = |vs: &[VertexId]| {
            let mut all: Vec<LeafId> = vs
                .iter()
                .flat_map(|&v| leaves.of_vertex(v).iter().copied())
                .collect();
            all.sort_unstable();
            all.dedup();
            all
        };
        let (mut listed, mut marked, mut chosen) = (Vec::new(), Vec::new(), Vec::new());
        let vertices = |vs: &[u32]| vs.iter().copied().map(VertexId::new).collect::<Vec<_>>();
        for vs in [
            vertices(&[5]),
            vertices(&[31, 0, 16]),
            (0..32).rev().map(VertexId::new).collect(),
            vec![],
        ] {
            Strays::<Dop18>::leaves_sorted(&leaves, &vs, &mut listed);
            strays.leaves_marked(&leaves, &vs, &mut marked);
            strays.leaves_of(&leaves, &vs, &mut chosen);
            assert_eq!(listed, sorted(&vs), "{vs:?}");
            assert_eq!(marked, listed, "{vs:?}");
            assert_eq!(chosen, listed, "{vs:?}");
            assert!(
                strays.leaf_bits.iter().all(|&w| w == 0),
                "the bitset is left clear"
            );
            listed.clear();
            marked.clear();
        }
    }
}
