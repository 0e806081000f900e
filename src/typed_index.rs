//! Typed indices: one newtype over a dense `u32` index for each kind of thing acm numbers
//! (vertices, triangles, edges, broad-phase leaves, hierarchy nodes, node pairs), after
//! [`EventId`](crate::events::EventId), so that an index of one kind cannot be passed where
//! another is meant. Each type lives in the module that owns what it numbers; the
//! [`typed_index!`] macro writes them all alike.

/// Defines a typed index: a `u32` newtype (half a `usize`, so index arrays stay small) with
/// `const fn` conversions: `new` from a `u32`, `from_usize`, `index` (a `usize`, for slicing)
/// and `get` (the `u32`). It prints as the bare number, as the raw index did.
macro_rules! typed_index {
    ($(#[$meta:meta])* $vis:vis struct $name:ident;) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(transparent)]
        $vis struct $name(u32);

        // Every index type gets every conversion, whether or not its module needs each one.
        #[allow(dead_code)]
        impl $name {
            /// Wraps a raw index.
            #[inline]
            $vis const fn new(index: u32) -> Self {
                Self(index)
            }

            /// Wraps a `usize` index; panics in debug builds if it does not fit in `u32`.
            #[inline]
            $vis const fn from_usize(index: usize) -> Self {
                debug_assert!(index <= u32::MAX as usize);
                Self(index as u32)
            }

            /// The index as `usize`, for slicing.
            #[inline]
            $vis const fn index(self) -> usize {
                self.0 as usize
            }

            /// The raw `u32` index.
            #[inline]
            $vis const fn get(self) -> u32 {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

pub(crate) use typed_index;
