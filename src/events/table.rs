//! The event table: what each event is, stored as a structure of arrays.

use super::EventId;

/// What an event does; drives dispatch in the engine.
///
/// The event's payload (see `EventTable::payload`) is an index into the table of the subsystem
/// that owns this kind of event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EventKind {
    /// A force super-element tick (gravity, stretching, bending group).
    Force,
    /// A scripted motion change.
    Script,
    /// A snapshot (frame output).
    Snapshot,
    /// A certificate failure (separation slab, BVH pair, grid cell).
    Certificate,
    /// A penalty-layer super-event: one tick of one layer for every pair with it active.
    Penalty,
    /// The end of a broad-phase window: every swept box is rebuilt.
    BroadPhase,
}

/// A reference to an event: its slot id plus the slot's generation when the handle was made.
///
/// Slots are reused after removal with a bumped generation, so a handle to a removed event is
/// detected as stale (`EventTable::is_live` returns `false`) rather than silently aliasing the
/// slot's new occupant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventHandle {
    /// The slot.
    pub id: EventId,
    /// The slot's generation when this handle was issued.
    pub generation: u32,
}

/// Error returned when an operation is given a handle whose event no longer exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("stale event handle: id {} generation {}", .0.id.0, .0.generation)]
pub struct StaleHandle(pub EventHandle);

/// The table of all events, a structure of arrays indexed by `EventId`.
///
/// Layout: `kind[i]`, `payload[i]`, `generation[i]` and `live[i]` describe slot `i`; the arrays
/// always have the same length, `capacity_ids`, the number of slots ever
/// allocated. Dispatch reads only `kind` and `payload`, handle checks only `generation` and
/// `live`, so each access touches one or two small dense arrays (1 + 4 bytes per event on the
/// dispatch path) instead of a padded row struct. Event *times* are not stored here: they live in
/// the `EventQueue`, the only place that orders them.
///
/// Removed slots go on a LIFO free list and are reused by the next `insert`,
/// which bumps the slot's generation so old handles become stale. A slot whose generation would
/// wrap around is retired instead of reused, so a stale handle can never alias a new event.
#[derive(Clone, Debug, Default)]
pub struct EventTable {
    kind: Vec<EventKind>,
    payload: Vec<u32>,
    generation: Vec<u32>,
    live: Vec<bool>,
    free: Vec<u32>,
    n_live: usize,
}

impl EventTable {
    /// An empty table.
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// An empty table with room for `n` slots before reallocating.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            kind: Vec::with_capacity(n),
            payload: Vec::with_capacity(n),
            generation: Vec::with_capacity(n),
            live: Vec::with_capacity(n),
            free: Vec::new(),
            n_live: 0,
        }
    }

    /// Adds an event and returns its handle.
    ///
    /// Reuses the most recently freed slot (LIFO) with its generation bumped by one; otherwise
    /// appends a new slot with generation 0.
    pub(crate) fn insert(&mut self, kind: EventKind, payload: u32) -> EventHandle {
        let Some(slot) = self.free.pop() else {
            return self.insert_fresh(kind, payload);
        };
        self.n_live += 1;
        let i = slot as usize;
        debug_assert!(!self.live[i]);
        self.generation[i] += 1;
        self.kind[i] = kind;
        self.payload[i] = payload;
        self.live[i] = true;
        EventHandle {
            id: EventId::new(slot),
            generation: self.generation[i],
        }
    }

    /// Adds an event in a new slot, never a reused one, so its id is larger than every id issued
    /// before. Long-lived events whose same-time order must not depend on history (penalty
    /// layers: layer `l + 1` always pops after layer `l`) take their ids from here.
    pub(crate) fn insert_fresh(&mut self, kind: EventKind, payload: u32) -> EventHandle {
        self.n_live += 1;
        let id = EventId::from_usize(self.kind.len());
        self.kind.push(kind);
        self.payload.push(payload);
        self.generation.push(0);
        self.live.push(true);
        EventHandle { id, generation: 0 }
    }

    /// Removes the event `h` refers to, freeing its slot for reuse.
    ///
    /// Returns [`StaleHandle`] (and changes nothing) if `h` is stale or was never issued.
    pub(crate) fn remove(&mut self, h: EventHandle) -> Result<(), StaleHandle> {
        if !self.is_live(h) {
            return Err(StaleHandle(h));
        }
        let i = h.id.index();
        self.live[i] = false;
        self.n_live -= 1;
        // Retire the slot rather than let its generation wrap onto old handles.
        if self.generation[i] != u32::MAX {
            self.free.push(h.id.0);
        }
        Ok(())
    }

    /// Whether `h` refers to an event that still exists.
    #[inline]
    pub(crate) fn is_live(&self, h: EventHandle) -> bool {
        let i = h.id.index();
        i < self.live.len() && self.live[i] && self.generation[i] == h.generation
    }

    #[cfg(test)]
    /// Whether slot `id` currently holds an event (whatever its generation).
    #[inline]
    pub(crate) fn is_live_id(&self, id: EventId) -> bool {
        self.live.get(id.index()).copied().unwrap_or(false)
    }

    /// The kind of the event in slot `id` (the last occupant's, if the slot is free).
    ///
    /// Panics if `id` was never allocated.
    #[inline]
    pub(crate) fn kind(&self, id: EventId) -> EventKind {
        self.kind[id.index()]
    }

    /// The payload of the event in slot `id` (the last occupant's, if the slot is free).
    ///
    /// Panics if `id` was never allocated.
    #[inline]
    pub(crate) fn payload(&self, id: EventId) -> u32 {
        self.payload[id.index()]
    }

    /// The current generation of slot `id`.
    ///
    /// Panics if `id` was never allocated.
    #[inline]
    pub(crate) fn generation(&self, id: EventId) -> u32 {
        self.generation[id.index()]
    }

    /// The handle of the current (or last) occupant of slot `id`.
    ///
    /// Panics if `id` was never allocated.
    #[inline]
    pub(crate) fn handle(&self, id: EventId) -> EventHandle {
        EventHandle {
            id,
            generation: self.generation(id),
        }
    }

    /// Whether there are no live events.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.n_live == 0
    }

    /// Number of live events.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.n_live
    }

    #[cfg(test)]
    /// Number of slots ever allocated; every [`EventId`] issued is below this. Size per-event
    /// side arrays (such as the queue's position array) with it.
    #[inline]
    pub(crate) fn capacity_ids(&self) -> usize {
        self.kind.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_assigns_dense_ids() {
        let mut t = EventTable::new();
        let a = t.insert(EventKind::Force, 7);
        let b = t.insert(EventKind::Snapshot, 9);
        assert_eq!(a.id, EventId(0));
        assert_eq!(b.id, EventId(1));
        assert_eq!(a.generation, 0);
        assert_eq!(t.kind(b.id), EventKind::Snapshot);
        assert_eq!(t.payload(a.id), 7);
        assert_eq!(t.len(), 2);
        assert_eq!(t.capacity_ids(), 2);
        assert!(t.is_live(a) && t.is_live(b));
    }

    #[test]
    fn remove_then_insert_reuses_slot_with_new_generation() {
        let mut t = EventTable::with_capacity(4);
        let a = t.insert(EventKind::Force, 1);
        let b = t.insert(EventKind::Certificate, 2);
        t.remove(a).unwrap();
        assert!(!t.is_live(a));
        assert!(!t.is_live_id(a.id));
        assert_eq!(t.len(), 1);
        let c = t.insert(EventKind::Penalty, 3);
        assert_eq!(c.id, a.id, "freed slot is reused");
        assert_eq!(c.generation, a.generation + 1);
        assert!(t.is_live(c));
        assert!(!t.is_live(a), "old handle is stale");
        assert_eq!(t.kind(c.id), EventKind::Penalty);
        assert_eq!(t.payload(c.id), 3);
        assert_eq!(t.handle(c.id), c);
        assert_eq!(t.capacity_ids(), 2);
        assert!(t.is_live(b));
    }

    #[test]
    fn free_list_is_lifo() {
        let mut t = EventTable::new();
        let h: Vec<_> = (0..4).map(|i| t.insert(EventKind::Script, i)).collect();
        t.remove(h[1]).unwrap();
        t.remove(h[3]).unwrap();
        assert_eq!(t.insert(EventKind::Script, 10).id, h[3].id);
        assert_eq!(t.insert(EventKind::Script, 11).id, h[1].id);
        assert_eq!(t.insert(EventKind::Script, 12).id, EventId(4));
    }

    #[test]
    fn insert_fresh_never_reuses_a_slot() {
        let mut t = EventTable::new();
        let a = t.insert(EventKind::Certificate, 0);
        let b = t.insert(EventKind::Certificate, 1);
        t.remove(a).unwrap();
        let fresh = t.insert_fresh(EventKind::Penalty, 1);
        assert!(
            fresh.id > b.id,
            "a fresh id is larger than every earlier one"
        );
        assert_eq!(t.len(), 2);
        assert_eq!(
            t.insert(EventKind::Certificate, 2).id,
            a.id,
            "the free list is kept"
        );
    }

    #[test]
    fn stale_remove_errors() {
        let mut t = EventTable::new();
        let a = t.insert(EventKind::Force, 0);
        t.remove(a).unwrap();
        assert_eq!(t.remove(a), Err(StaleHandle(a)));
        let c = t.insert(EventKind::Force, 0);
        assert_eq!(t.remove(a), Err(StaleHandle(a)), "stale even after reuse");
        assert!(t.is_live(c), "failed remove changed nothing");
        assert_eq!(t.len(), 1);
        let never = EventHandle {
            id: EventId(99),
            generation: 0,
        };
        assert!(!t.is_live(never));
        assert!(t.remove(never).is_err());
        assert!(!t.is_empty());
        t.remove(c).unwrap();
        assert!(t.is_empty());
    }

    #[test]
    fn slot_is_retired_before_generation_wraps() {
        let mut t = EventTable::new();
        let a = t.insert(EventKind::Force, 0);
        t.generation[0] = u32::MAX;
        let a_max = t.handle(a.id);
        t.remove(a_max).unwrap();
        let b = t.insert(EventKind::Force, 0);
        assert_ne!(b.id, a.id);
        assert!(!t.is_live(a_max));
    }
}
