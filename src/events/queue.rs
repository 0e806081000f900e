//! The event queue: an indexed D-ary min-heap keyed by (time, id).

use hashbrown::HashMap;

use super::EventId;

/// Position-array marker for "this id is not in the heap".
const NONE: u32 = u32::MAX;

/// Maps an `f64` to a `u64` whose unsigned order is the numeric order of the floats.
///
/// Non-negative floats get their sign bit set; negative floats have all bits flipped. `-0.0` is
/// first normalised to `+0.0` so that the two zeros are one key and tie-break by id.
#[inline]
fn time_to_key(time: f64) -> u64 {
    debug_assert!(!time.is_nan(), "event time must not be NaN");
    let bits = (time + 0.0).to_bits();
    let mask = (((bits as i64) >> 63) as u64) | (1 << 63);
    bits ^ mask
}

/// Inverse of [`time_to_key`].
#[inline]
fn key_to_time(key: u64) -> f64 {
    let mask = (((!key as i64) >> 63) as u64) | (1 << 63);
    f64::from_bits(key ^ mask)
}

/// One heap slot: the order-preserving time key in the high 64 bits and the event id in the low
/// 32 bits of one `u128` (16 bytes, 16-byte aligned). Ordering entries is then a single 128-bit
/// integer compare on contiguous memory, which the compiler turns into branch-free selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry(u128);

impl Entry {
    #[inline(always)]
    fn new(key: u64, id: u32) -> Self {
        Self(((key as u128) << 64) | id as u128)
    }

    #[inline(always)]
    fn key(self) -> u64 {
        (self.0 >> 64) as u64
    }

    #[inline(always)]
    fn id(self) -> u32 {
        self.0 as u32
    }

    /// Strict (time, id) order. Ids are unique in the heap, so this is a total order on entries.
    #[inline(always)]
    fn less(self, other: Entry) -> bool {
        self < other
    }
}

/// Where an [`EventQueue`] keeps the heap slot of each queued id.
pub(crate) trait Slots: Clone + std::fmt::Debug + Default {
    /// Room for ids below `n` without growing.
    fn with_capacity(n: usize) -> Self;
    /// The slot of `id`, or `u32::MAX` if it is not queued.
    fn get(&self, id: u32) -> u32;
    /// Makes room for `id` before it is queued.
    fn prepare(&mut self, id: u32);
    /// Sets the slot of queued `id` (prepared).
    fn set(&mut self, id: u32, slot: u32);
    /// Marks `id` as not queued.
    fn unset(&mut self, id: u32);
    /// How many ids are marked queued (for `EventQueue::check_invariants`).
    #[cfg(test)]
    fn queued(&self) -> usize;
}

/// Slots in an array indexed by id: no hashing, and memory for every id up to the largest ever
/// queued. For ids that are mostly queued (the engine's events).
#[derive(Clone, Debug, Default)]
pub(crate) struct DenseSlots(Vec<u32>);

impl Slots for DenseSlots {
    fn with_capacity(n: usize) -> Self {
        Self(vec![NONE; n])
    }

    #[inline(always)]
    fn get(&self, id: u32) -> u32 {
        self.0.get(id as usize).copied().unwrap_or(NONE)
    }

    #[inline]
    fn prepare(&mut self, id: u32) {
        if id as usize >= self.0.len() {
            // Amortised growth: `resize` reallocates geometrically.
            self.0.resize(id as usize + 1, NONE);
        }
    }

    #[inline(always)]
    fn set(&mut self, id: u32, slot: u32) {
        self.0[id as usize] = slot;
    }

    #[inline(always)]
    fn unset(&mut self, id: u32) {
        self.0[id as usize] = NONE;
    }

    #[cfg(test)]
    fn queued(&self) -> usize {
        self.0.iter().filter(|&&p| p != NONE).count()
    }
}

/// Slots in a hash map: memory for the queued ids only. For a queue that holds few of many ids
/// at a time (the separation list queues a few thousand of its millions of pair ids, where an
/// array indexed by pair id would cost 4 bytes a pair).
#[derive(Clone, Debug, Default)]
pub(crate) struct SparseSlots(HashMap<u32, u32>);

impl Slots for SparseSlots {
    fn with_capacity(n: usize) -> Self {
        Self(HashMap::with_capacity(n))
    }

    #[inline(always)]
    fn get(&self, id: u32) -> u32 {
        self.0.get(&id).copied().unwrap_or(NONE)
    }

    #[inline(always)]
    fn prepare(&mut self, _id: u32) {}

    #[inline(always)]
    fn set(&mut self, id: u32, slot: u32) {
        self.0.insert(id, slot);
    }

    #[inline(always)]
    fn unset(&mut self, id: u32) {
        self.0.remove(&id);
    }

    #[cfg(test)]
    fn queued(&self) -> usize {
        self.0.len()
    }
}

/// The priority queue of pending events: an indexed D-ary min-heap over [`EventId`]s.
///
/// Layout: `heap` is an implicit D-ary tree in one array of 16-byte entries
/// `{ key: u64, id: u32 }` (children of slot `i` are `D*i + 1 ..= D*i + D`), where `key` is the
/// event time mapped to an order-preserving `u64` bit pattern; comparisons are integer compares
/// on `(key, id)`, so the D children of a slot are one or two cache lines. `pos` ([`Slots`]:
/// an array indexed by id by default, or a hash map) gives each queued id's slot in `heap`. It makes
/// `contains` and `time_of` O(1) and
/// [`update`](Self::update) and `remove` O(log n).
///
/// Order: the earliest time first; equal times pop by increasing id, so the order is fully
/// deterministic and depends only on the queue's contents, never on the history of operations.
///
/// Times must not be NaN (checked by `debug_assert`). `+inf` is allowed (an event that never
/// fires, kept queued) and so are negative times. `-0.0` is stored as `+0.0`, so
/// `time_of` and [`pop`](Self::pop) return `+0.0` for it.
///
/// Memory is only allocated when the heap or the largest id grows; in steady state no operation
/// allocates. `D` must be at least 2 (checked at compile time). The default is 8: on the
/// development VM `benches/queue.rs` measured 8 about 25% faster than 4 at 10^6 events and
/// 20% faster at 10^4, and 2 clearly slower (see `benches/README.md`).
#[derive(Clone, Debug)]
pub(crate) struct EventQueue<const D: usize = 8, S = DenseSlots> {
    heap: Vec<Entry>,
    pos: S,
}

impl<const D: usize, S: Slots> Default for EventQueue<D, S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const D: usize, S: Slots> EventQueue<D, S> {
    const ARITY_OK: () = assert!(D >= 2, "EventQueue arity D must be at least 2");

    /// An empty queue.
    pub(crate) fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::ARITY_OK;
        Self {
            heap: Vec::new(),
            pos: S::default(),
        }
    }

    /// An empty queue with room for `n` events with ids below `n` before reallocating.
    pub(crate) fn with_capacity(n: usize) -> Self {
        let mut q = Self::new();
        q.heap.reserve(n);
        q.pos = S::with_capacity(n);
        q
    }

    /// Queues `id` at `time`; if `id` is already queued this moves it to `time` (same as
    /// [`update`](Self::update)).
    #[inline]
    pub(crate) fn push(&mut self, id: EventId, time: f64) {
        self.update(id, time);
    }

    /// Moves queued `id` to `time` (earlier or later); if `id` is not queued, queues it.
    pub(crate) fn update(&mut self, id: EventId, time: f64) {
        let e = Entry::new(time_to_key(time), id.0);
        let slot = self.slot_of(id);
        if slot == NONE {
            self.ensure_pos(id);
            let n = self.heap.len();
            debug_assert!(n < NONE as usize);
            self.heap.push(e);
            self.sift_up(n, e);
        } else {
            let slot = slot as usize;
            if e.less(self.heap[slot]) {
                self.sift_up(slot, e);
            } else {
                self.sift_down(slot, e);
            }
        }
    }

    /// Removes `id` from the queue; returns whether it was queued.
    pub(crate) fn remove(&mut self, id: EventId) -> bool {
        let slot = self.slot_of(id);
        if slot == NONE {
            return false;
        }
        self.pos.unset(id.0);
        let slot = slot as usize;
        let last = self
            .heap
            .pop()
            .expect("a queued id implies a non-empty heap");
        if slot < self.heap.len() {
            // Refill the hole with the former last entry, moving it whichever way it must go.
            let removed = self.heap[slot];
            if last.less(removed) {
                self.sift_up(slot, last);
            } else {
                self.sift_down(slot, last);
            }
        }
        true
    }

    /// Removes and returns the earliest event (smallest time, then smallest id).
    pub(crate) fn pop(&mut self) -> Option<(EventId, f64)> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().expect("non-empty");
        self.pos.unset(top.id());
        if !self.heap.is_empty() {
            self.sift_down(0, last);
        }
        Some((EventId(top.id()), key_to_time(top.key())))
    }

    /// The earliest event, without removing it.
    #[inline]
    pub(crate) fn peek(&self) -> Option<(EventId, f64)> {
        self.heap
            .first()
            .map(|e| (EventId(e.id()), key_to_time(e.key())))
    }

    /// The time `id` is queued at, or `None` if it is not queued.
    #[inline]
    pub(crate) fn time_of(&self, id: EventId) -> Option<f64> {
        match self.slot_of(id) {
            NONE => None,
            s => Some(key_to_time(self.heap[s as usize].key())),
        }
    }

    /// Whether `id` is queued.
    #[cfg(test)]
    pub(crate) fn contains(&self, id: EventId) -> bool {
        self.slot_of(id) != NONE
    }

    /// Whether no event is queued.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Number of queued events.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Removes every event, keeping the allocated memory. O(len).
    pub(crate) fn clear(&mut self) {
        for e in &self.heap {
            self.pos.unset(e.id());
        }
        self.heap.clear();
    }

    /// Applies many `(id, new time)` updates as one batch.
    ///
    /// The result is identical to calling [`update`](Self::update) on each pair one by one in the
    /// given order: the same ids end up queued, each at the time of its *last* pair in `updates`,
    /// and since the (time, id) order is total, every later `pop`, `peek`, `time_of` and
    /// `contains` returns exactly what it would have. (The internal slot layout may differ,
    /// which is unobservable.)
    ///
    /// Small batches are applied one by one; a batch large against the queue (more than about
    /// `len / log2(len)` pairs) writes all keys in place and rebuilds the heap in O(len), which
    /// is cheaper than that many O(log len) sifts.
    pub(crate) fn update_batch(&mut self, updates: &[(EventId, f64)]) {
        let n = self.heap.len() + 1;
        let log_n = (usize::BITS - n.leading_zeros()) as usize;
        if updates.len().saturating_mul(log_n) <= n {
            for &(id, time) in updates {
                self.update(id, time);
            }
            return;
        }
        for &(id, time) in updates {
            let e = Entry::new(time_to_key(time), id.0);
            match self.slot_of(id) {
                NONE => {
                    self.ensure_pos(id);
                    let slot = self.heap.len();
                    debug_assert!(slot < NONE as usize);
                    self.pos.set(id.0, slot as u32);
                    self.heap.push(e);
                }
                s => self.heap[s as usize] = e,
            }
        }
        self.heapify();
    }

    #[cfg(test)]
    /// Checks the heap order and the consistency of the position array; panics on a violation.
    ///
    /// O(len + largest id) with [`DenseSlots`]. For tests and debugging.
    pub(crate) fn check_invariants(&self) {
        for (i, e) in self.heap.iter().enumerate() {
            assert_eq!(self.pos.get(e.id()) as usize, i, "pos[{}] != slot", e.id());
            assert!(!key_to_time(e.key()).is_nan(), "NaN time in heap");
            if i > 0 {
                let p = (i - 1) / D;
                assert!(
                    self.heap[p].less(*e),
                    "heap order violated between slot {p} and child {i}"
                );
            }
        }
        let queued = self.pos.queued();
        assert_eq!(
            queued,
            self.heap.len(),
            "pos array marks stale ids as queued"
        );
    }

    #[inline(always)]
    fn slot_of(&self, id: EventId) -> u32 {
        self.pos.get(id.0)
    }

    #[inline]
    fn ensure_pos(&mut self, id: EventId) {
        debug_assert!(id.is_valid(), "EventId::INVALID cannot be queued");
        self.pos.prepare(id.0);
    }

    /// Places `e` at `i` or above, moving larger ancestors down into the hole.
    #[inline]
    fn sift_up(&mut self, mut i: usize, e: Entry) {
        while i > 0 {
            let p = (i - 1) / D;
            let pe = self.heap[p];
            if !e.less(pe) {
                break;
            }
            self.heap[i] = pe;
            self.pos.set(pe.id(), i as u32);
            i = p;
        }
        self.heap[i] = e;
        self.pos.set(e.id(), i as u32);
    }

    /// Places `e` at `i` or below, moving smaller children up into the hole.
    #[inline]
    fn sift_down(&mut self, mut i: usize, e: Entry) {
        let n = self.heap.len();
        loop {
            let first = D * i + 1;
            if first >= n {
                break;
            }
            let (c, ce) = if first + D <= n {
                // Full set of D children: fixed trip count, unrolled by the compiler.
                let kids: &[Entry; D] = self.heap[first..first + D].try_into().unwrap();
                let (mut best, mut be) = (0, kids[0]);
                for (k, &ke) in kids.iter().enumerate().skip(1) {
                    // Select without a branch: which child is smallest is unpredictable.
                    let lt = ke.less(be);
                    best = if lt { k } else { best };
                    be = if lt { ke } else { be };
                }
                (first + best, be)
            } else {
                let mut best = first;
                for k in first + 1..n {
                    if self.heap[k].less(self.heap[best]) {
                        best = k;
                    }
                }
                (best, self.heap[best])
            };
            if !ce.less(e) {
                break;
            }
            self.heap[i] = ce;
            self.pos.set(ce.id(), i as u32);
            i = c;
        }
        self.heap[i] = e;
        self.pos.set(e.id(), i as u32);
    }

    /// Restores heap order over the whole array (Floyd's bottom-up construction, O(len)).
    fn heapify(&mut self) {
        let n = self.heap.len();
        if n < 2 {
            return;
        }
        for i in (0..=(n - 2) / D).rev() {
            let e = self.heap[i];
            self.sift_down(i, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn drain<const D: usize, S: Slots>(q: &mut EventQueue<D, S>) -> Vec<(u32, f64)> {
        let mut out = Vec::new();
        while let Some((id, t)) = q.pop() {
            q.check_invariants();
            out.push((id.0, t));
        }
        out
    }

    #[test]
    fn key_mapping_preserves_order_and_round_trips() {
        let ts = [
            f64::NEG_INFINITY,
            -1e300,
            -1.0,
            -f64::MIN_POSITIVE,
            -5e-324,
            0.0,
            5e-324,
            f64::MIN_POSITIVE,
            1.0,
            1.5,
            1e300,
            f64::MAX,
            f64::INFINITY,
        ];
        for w in ts.windows(2) {
            assert!(time_to_key(w[0]) < time_to_key(w[1]), "{} < {}", w[0], w[1]);
        }
        for &t in &ts {
            assert_eq!(key_to_time(time_to_key(t)).to_bits(), t.to_bits());
        }
        assert_eq!(time_to_key(-0.0), time_to_key(0.0));
    }

    fn pops_sorted<const D: usize>() {
        let mut q = EventQueue::<D>::new();
        let mut expect = Vec::new();
        let mut x: u64 = 12345;
        for id in 0..500u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let t = (x >> 40) as f64 / 1000.0 - 100.0;
            q.push(EventId(id), t);
            q.check_invariants();
            expect.push((t, id));
        }
        expect.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        assert_eq!(q.len(), 500);
        let got = drain(&mut q);
        let want: Vec<_> = expect.into_iter().map(|(t, id)| (id, t)).collect();
        assert_eq!(got, want);
        assert!(q.is_empty());
    }

    #[test]
    fn pops_in_sorted_order() {
        pops_sorted::<2>();
        pops_sorted::<3>();
        pops_sorted::<4>();
        pops_sorted::<8>();
    }

    #[test]
    fn ties_break_by_id() {
        let mut q = EventQueue::<4>::new();
        for id in [5u32, 3, 9, 0, 7] {
            q.push(EventId(id), 2.0);
        }
        q.push(EventId(8), -0.0);
        q.push(EventId(1), 0.0);
        q.push(EventId(4), 1.0);
        let got = drain(&mut q);
        assert_eq!(
            got,
            vec![
                (1, 0.0),
                (8, 0.0),
                (4, 1.0),
                (0, 2.0),
                (3, 2.0),
                (5, 2.0),
                (7, 2.0),
                (9, 2.0)
            ]
        );
        assert!(got[1].1.is_sign_positive(), "-0.0 is stored as +0.0");
    }

    #[test]
    fn update_up_and_down() {
        let mut q = EventQueue::<4>::new();
        for id in 0..20u32 {
            q.push(EventId(id), id as f64);
        }
        q.update(EventId(15), -1.0); // decrease to the front
        q.check_invariants();
        assert_eq!(q.peek(), Some((EventId(15), -1.0)));
        q.update(EventId(15), 100.0); // increase to the back
        q.update(EventId(0), 10.0); // increase into a tie with id 10: 0 goes first
        q.push(EventId(3), 2.5); // push of a queued id acts as update
        q.update(EventId(42), 0.5); // update of an absent id pushes
        q.check_invariants();
        assert_eq!(q.len(), 21);
        let ids: Vec<u32> = drain(&mut q).into_iter().map(|(id, _)| id).collect();
        assert_eq!(
            ids,
            vec![42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 10, 11, 12, 13, 14, 16, 17, 18, 19, 15]
        );
    }

    #[test]
    fn remove_from_the_middle() {
        let mut q = EventQueue::<2>::new();
        for id in 0..31u32 {
            q.push(EventId(id), (id * 7 % 31) as f64);
        }
        for id in [12u32, 0, 30, 17, 5] {
            assert!(q.remove(EventId(id)));
            q.check_invariants();
            assert!(!q.contains(EventId(id)));
            assert!(!q.remove(EventId(id)), "second remove reports absence");
        }
        assert!(!q.remove(EventId(1000)), "never-seen id");
        assert_eq!(q.len(), 26);
        let got = drain(&mut q);
        assert_eq!(got.len(), 26);
        assert!(got.windows(2).all(|w| w[0].1 < w[1].1));
        assert!(got.iter().all(|(id, _)| ![12, 0, 30, 17, 5].contains(id)));
    }

    #[test]
    fn contains_and_time_of() {
        let mut q = EventQueue::<4>::with_capacity(8);
        assert!(!q.contains(EventId(3)));
        assert_eq!(q.time_of(EventId(3)), None);
        assert_eq!(q.time_of(EventId(1 << 20)), None);
        q.push(EventId(3), 0.25);
        q.push(EventId(100), -7.0);
        assert!(q.contains(EventId(3)) && q.contains(EventId(100)));
        assert_eq!(q.time_of(EventId(3)), Some(0.25));
        assert_eq!(q.time_of(EventId(100)), Some(-7.0));
        assert_eq!(q.pop(), Some((EventId(100), -7.0)));
        assert!(!q.contains(EventId(100)));
        assert_eq!(q.time_of(EventId(100)), None);
        q.clear();
        q.check_invariants();
        assert!(q.is_empty() && !q.contains(EventId(3)));
        assert_eq!(q.pop(), None);
        assert_eq!(q.peek(), None);
        q.push(EventId(3), 1.0);
        assert_eq!(q.peek(), Some((EventId(3), 1.0)));
    }

    #[test]
    fn infinite_keys() {
        let mut q = EventQueue::<4>::new();
        q.push(EventId(0), f64::INFINITY);
        q.push(EventId(1), 1e308);
        q.push(EventId(2), f64::INFINITY);
        q.push(EventId(3), f64::MAX);
        assert_eq!(q.time_of(EventId(2)), Some(f64::INFINITY));
        assert_eq!(
            drain(&mut q),
            vec![
                (1, 1e308),
                (3, f64::MAX),
                (0, f64::INFINITY),
                (2, f64::INFINITY)
            ]
        );
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "NaN")]
    fn nan_is_rejected_in_debug() {
        EventQueue::<4>::new().push(EventId(0), f64::NAN);
    }

    fn batch_matches_sequential<const D: usize, S: Slots>(n: u32, batch: usize) {
        let mut a = EventQueue::<D, S>::new();
        let mut x: u64 = 99;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for id in 0..n {
            a.push(EventId(id), (rnd() % 1000) as f64);
        }
        let mut b = a.clone();
        // Repeated ids (last one wins), fresh ids, ties, +inf.
        let updates: Vec<(EventId, f64)> = (0..batch)
            .map(|k| {
                let id = (rnd() % (n as u64 + 10)) as u32;
                let t = if k % 17 == 0 {
                    f64::INFINITY
                } else {
                    (rnd() % 1000) as f64
                };
                (EventId(id), t)
            })
            .collect();
        for &(id, t) in &updates {
            a.update(id, t);
        }
        b.update_batch(&updates);
        b.check_invariants();
        assert_eq!(a.len(), b.len());
        for id in 0..n + 10 {
            assert_eq!(a.time_of(EventId(id)), b.time_of(EventId(id)));
        }
        assert_eq!(drain(&mut a), drain(&mut b));
    }

    #[test]
    fn update_batch_equals_sequential() {
        for &(n, batch) in &[(0u32, 0usize), (0, 5), (1000, 3), (1000, 400), (200, 2000)] {
            batch_matches_sequential::<2, DenseSlots>(n, batch);
            batch_matches_sequential::<4, DenseSlots>(n, batch);
            batch_matches_sequential::<8, DenseSlots>(n, batch);
            batch_matches_sequential::<8, SparseSlots>(n, batch);
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Push(u32, f64),
        Update(u32, f64),
        Remove(u32),
        Pop,
        Batch(Vec<(u32, f64)>),
    }

    fn time() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => (0u32..16).prop_map(f64::from), // many ties
            2 => -1e6f64..1e6,
            1 => Just(f64::INFINITY),
            1 => Just(-0.0),
            1 => any::<f64>().prop_filter("no NaN", |t| !t.is_nan()),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        let id = 0u32..48;
        prop_oneof![
            4 => (id.clone(), time()).prop_map(|(i, t)| Op::Push(i, t)),
            3 => (id.clone(), time()).prop_map(|(i, t)| Op::Update(i, t)),
            2 => id.clone().prop_map(Op::Remove),
            3 => Just(Op::Pop),
            1 => prop::collection::vec((id, time()), 0..80).prop_map(Op::Batch),
        ]
    }

    /// Reference model: a sorted set of (key, id) plus each id's current key.
    #[derive(Default)]
    struct Model {
        set: BTreeSet<(u64, u32)>,
        key: std::collections::HashMap<u32, u64>,
    }

    impl Model {
        fn set(&mut self, id: u32, t: f64) {
            let k = time_to_key(t);
            if let Some(old) = self.key.insert(id, k) {
                self.set.remove(&(old, id));
            }
            self.set.insert((k, id));
        }
        fn remove(&mut self, id: u32) -> bool {
            match self.key.remove(&id) {
                Some(k) => self.set.remove(&(k, id)),
                None => false,
            }
        }
        fn pop(&mut self) -> Option<(EventId, f64)> {
            let (k, id) = self.set.pop_first()?;
            self.key.remove(&id);
            Some((EventId(id), key_to_time(k)))
        }
    }

    fn same(a: Option<(EventId, f64)>, b: Option<(EventId, f64)>) -> bool {
        a.map(|(i, t)| (i, t.to_bits())) == b.map(|(i, t)| (i, t.to_bits()))
    }

    fn run_model<const D: usize, S: Slots>(ops: &[Op]) -> Result<(), TestCaseError> {
        let mut q = EventQueue::<D, S>::new();
        let mut m = Model::default();
        for op in ops {
            match op {
                Op::Push(i, t) => {
                    q.push(EventId(*i), *t);
                    m.set(*i, *t);
                }
                Op::Update(i, t) => {
                    q.update(EventId(*i), *t);
                    m.set(*i, *t);
                }
                Op::Remove(i) => prop_assert_eq!(q.remove(EventId(*i)), m.remove(*i)),
                Op::Pop => {
                    let (a, b) = (q.pop(), m.pop());
                    prop_assert!(same(a, b), "pop {:?} vs model {:?}", a, b);
                }
                Op::Batch(v) => {
                    let v: Vec<_> = v.iter().map(|&(i, t)| (EventId(i), t)).collect();
                    q.update_batch(&v);
                    for &(i, t) in &v {
                        m.set(i.0, t);
                    }
                }
            }
            q.check_invariants();
            prop_assert_eq!(q.len(), m.set.len());
            let want_peek = m.set.first().map(|&(k, i)| (EventId(i), key_to_time(k)));
            prop_assert!(same(q.peek(), want_peek));
            for id in 0..48u32 {
                let want = m.key.get(&id).map(|&k| key_to_time(k).to_bits());
                prop_assert_eq!(q.time_of(EventId(id)).map(f64::to_bits), want);
                prop_assert_eq!(q.contains(EventId(id)), want.is_some());
            }
        }
        while let Some(b) = m.pop() {
            prop_assert!(same(q.pop(), Some(b)));
        }
        prop_assert!(q.is_empty());
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn matches_reference_model(ops in prop::collection::vec(op(), 0..200)) {
            run_model::<2, DenseSlots>(&ops)?;
            run_model::<3, DenseSlots>(&ops)?;
            run_model::<4, DenseSlots>(&ops)?;
            run_model::<8, DenseSlots>(&ops)?;
            run_model::<2, SparseSlots>(&ops)?;
            run_model::<8, SparseSlots>(&ops)?;
        }
    }
}
