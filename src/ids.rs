//! Dense `u32` index newtypes.
//!
//! Every table in acm is a structure of arrays indexed by one of these ids. They are plain
//! `u32`s (half the size of `usize`, so index arrays stay cache-friendly) with a reserved
//! [`INVALID`](VertexId::INVALID) value, and `const fn` conversions so they cost nothing.

macro_rules! define_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub u32);

        impl $name {
            /// The reserved "no such element" value.
            pub const INVALID: Self = Self(u32::MAX);

            /// Wraps a raw index.
            #[inline]
            pub const fn new(index: u32) -> Self {
                Self(index)
            }

            /// Wraps a `usize` index; panics in debug builds if it does not fit in `u32`.
            #[inline]
            pub const fn from_usize(index: usize) -> Self {
                debug_assert!(index < u32::MAX as usize);
                Self(index as u32)
            }

            /// The index as `usize`, for slicing.
            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }

            /// Whether this is a real id rather than [`Self::INVALID`].
            #[inline]
            pub const fn is_valid(self) -> bool {
                self.0 != u32::MAX
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

define_id!(
    /// A vertex in the global vertex buffers of a simulation.
    VertexId
);
define_id!(
    /// A triangle in the global triangle list.
    TriId
);
define_id!(
    /// An edge in a mesh's edge list.
    EdgeId
);
define_id!(
    /// An interior edge (hinge) carrying a bending element.
    HingeId
);
define_id!(
    /// A slot in the event table; pair with a generation to detect stale handles.
    EventId
);
define_id!(
    /// An object (one mesh) of a scene.
    ObjectId
);
