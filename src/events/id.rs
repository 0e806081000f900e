//! [`EventId`]: the slot of an event in the [`EventTable`](super::EventTable).

/// A slot in the event table, a dense `u32` (half a `usize`, so index arrays stay small); pair
/// it with a generation ([`EventHandle`](super::EventHandle)) to detect stale handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EventId(pub u32);

impl EventId {
    /// The reserved "no such event" value.
    pub(crate) const INVALID: Self = Self(u32::MAX);

    /// Wraps a raw index.
    #[inline]
    pub(crate) const fn new(index: u32) -> Self {
        Self(index)
    }

    /// Wraps a `usize` index; panics in debug builds if it does not fit in `u32`.
    #[inline]
    pub(crate) const fn from_usize(index: usize) -> Self {
        debug_assert!(index < u32::MAX as usize);
        Self(index as u32)
    }

    /// The index as `usize`, for slicing.
    #[inline]
    pub(crate) const fn index(self) -> usize {
        self.0 as usize
    }

    /// Whether this is a real id rather than [`Self::INVALID`].
    #[inline]
    pub(crate) const fn is_valid(self) -> bool {
        self.0 != u32::MAX
    }
}
