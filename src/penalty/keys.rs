//! The identity of a candidate pair: which primitives it joins, in global indices.
//!
//! The broad phases hand over [`PairKey`]s; the contact subsystem keys its pair table by
//! [`ContactKey`], which is a feature pair or, with `speed.triangle_pairs`, a pair of
//! vertex-disjoint triangles standing for all fifteen of its feature pairs.

/// A candidate primitive pair, in global indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum PairKey {
    /// Vertex `0` against triangle `1`.
    VertexTriangle(u32, u32),
    /// Edge `0` against edge `1`, with `0 < 1`.
    EdgeEdge(u32, u32),
}

/// A contact pair: a VT or EE feature pair, or a pair of vertex-disjoint triangles (`s < t`,
/// side A is `s`). Feature pairs order before triangle pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum ContactKey {
    /// A vertex-triangle or edge-edge pair.
    Feature(PairKey),
    /// Two vertex-disjoint triangles, in ascending order.
    Triangles(u32, u32),
}

impl ContactKey {
    /// Number of vertices: four for a feature pair, six for a triangle pair.
    pub(crate) fn vertex_count(self) -> usize {
        match self {
            Self::Feature(_) => 4,
            Self::Triangles(..) => 6,
        }
    }

    /// Vertices on side A (see [`crate::kds::slab`]): 1 for VT, 2 for EE, 3 for triangles.
    pub(crate) fn a_count(self) -> usize {
        match self {
            Self::Feature(PairKey::VertexTriangle(..)) => 1,
            Self::Feature(PairKey::EdgeEdge(..)) => 2,
            Self::Triangles(..) => 3,
        }
    }
}
