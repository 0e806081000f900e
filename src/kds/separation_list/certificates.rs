//! The certificates of a separation list's node pairs (see the parent module's docs): when each
//! pair next changes, and the queue that orders them.
//!
//! Each live pair has at most one certificate, the earlier of its two failures (an apart pair
//! starts to overlap; an open pair stops overlapping, with the eager collapse), in the list's
//! own [`EventQueue`] under the pair's id, so ties pop in id order and a run is deterministic.
//! Certificates are computed over the certified span `[now, t_end]`, the horizon, and never
//! past the short-circuit `stop` before its end; the pairs whose certificates stopped there are
//! listed (`cut`) to be re-timed when the engine reaches it.

use rayon::prelude::*;

use super::node_pairs::{NodePairId, NodePairs, CUT, LIVE, OPEN};
use crate::events::{EventQueue, SparseSlots};
use crate::kds::bvh::Bvh;
use crate::kds::kdop::{after, AxisHint, Volume};
use crate::kds::PAR_MIN_LEN;
use crate::profiling::zone;

/// Pairs per batch of the passes over many pairs (re-timing, handing over at a rebuild): big
/// enough to keep both threads busy, small enough that the batch's scratch lists stay small
/// next to the list itself.
pub(super) const BATCH: usize = 1 << 16;

/// The certificates and the span they are computed over (see the module docs).
#[derive(Debug)]
pub(super) struct Certificates {
    /// Certificates by pair id: a few thousand of millions of ids are queued at a time, so the
    /// slots sit in a hash map rather than an array over every pair id.
    queue: EventQueue<8, SparseSlots>,
    /// The time the list has been brought to.
    now: f64,
    /// The horizon's end: volumes are valid and certificates computed up to it.
    t_end: f64,
    /// The short-circuit (see
    /// [`SeparationList::short_circuit`](super::SeparationList::short_circuit)): no
    /// certificate is computed past it; `+inf` when off.
    stop: f64,
    /// Pairs whose certificates were cut short at `stop`, to re-time there.
    cut: Vec<NodePairId>,
    /// Whether open pairs have the collapse certificate (see the parent module's docs).
    eager: bool,
    /// Inside a rebuild: open pairs are re-timed eagerly (and the walk hands nothing over,
    /// since the rebuild hands over every open leaf pair).
    rebuilding: bool,
    /// Axis order of the node-pair overlap tests.
    pair_axes: AxisHint,
    /// The certificate times of a batch, computed in parallel.
    scratch_when: Vec<Option<f64>>,
}

impl Certificates {
    /// No certificates; `eager` selects the collapse certificate.
    pub(super) fn new(eager: bool) -> Self {
        Self {
            queue: EventQueue::new(),
            now: 0.0,
            t_end: 0.0,
            stop: f64::INFINITY,
            cut: Vec::new(),
            eager,
            rebuilding: false,
            pair_axes: AxisHint::new(false),
            scratch_when: Vec::new(),
        }
    }

    /// Drops every certificate and the cut list (the pairs they name are gone).
    pub(super) fn clear(&mut self) {
        self.cut.clear();
        self.queue.clear();
    }

    /// Turns adaptive axis ordering of the overlap tests on or off.
    pub(super) fn set_adaptive_axes(&mut self, on: bool) {
        self.pair_axes.set_adaptive(on);
    }

    /// The time the list has been brought to.
    pub(super) fn now(&self) -> f64 {
        self.now
    }

    /// Brings the list to `t` (not before the current time).
    pub(super) fn set_now(&mut self, t: f64) {
        self.now = t;
    }

    /// The horizon's end.
    pub(super) fn t_end(&self) -> f64 {
        self.t_end
    }

    /// Starts a horizon ending at `t_end`.
    pub(super) fn set_t_end(&mut self, t_end: f64) {
        self.t_end = t_end;
    }

    /// The certified span `[now, t_end]`, over which feature pairs are tested too.
    pub(super) fn span(&self) -> (f64, f64) {
        (self.now, self.t_end)
    }

    /// The end of the certified span: the horizon's end, or the short-circuit before it.
    pub(super) fn stop_at(&self) -> f64 {
        self.stop.min(self.t_end)
    }

    /// Whether a rebuild is under way.
    pub(super) fn rebuilding(&self) -> bool {
        self.rebuilding
    }

    /// Marks the start or the end of a rebuild.
    pub(super) fn set_rebuilding(&mut self, on: bool) {
        self.rebuilding = on;
    }

    /// Certificates queued now.
    pub(super) fn len(&self) -> usize {
        self.queue.len()
    }

    /// The time of the next certificate, if any.
    pub(super) fn next_time(&self) -> Option<f64> {
        self.queue.peek().map(|(_, t)| t)
    }

    /// When pair `p`'s certificate is queued, if it is.
    pub(super) fn time_of(&self, p: NodePairId) -> Option<f64> {
        self.queue.time_of(p.event())
    }

    /// Takes the next certificate due at or before `t` off the queue: its pair.
    pub(super) fn pop_due(&mut self, t: f64) -> Option<NodePairId> {
        let (_, s) = self.queue.peek()?;
        if s > t {
            return None;
        }
        let (id, _) = self.queue.pop()?;
        Some(NodePairId::of_event(id))
    }

    /// Drops pair `p`'s certificate (the pair is freed).
    pub(super) fn remove(&mut self, p: NodePairId) {
        self.queue.remove(p.event());
    }

    /// Sets the short-circuit to `stop` and returns the live pairs cut short at the last one,
    /// in `pairs` (cleared first), to re-time.
    pub(super) fn short_circuit(
        &mut self,
        node_pairs: &mut NodePairs,
        stop: f64,
        pairs: &mut Vec<NodePairId>,
    ) {
        self.stop = stop;
        pairs.clear();
        for p in self.cut.drain(..) {
            node_pairs.set(p, CUT, false);
            if node_pairs.is(p, LIVE) {
                pairs.push(p);
            }
        }
    }

    /// The interval over the certified span in which pair `p`'s volumes may overlap.
    fn interval<V: Volume>(
        &self,
        pairs: &NodePairs,
        bvh: &Bvh<V>,
        p: NodePairId,
    ) -> Option<(f64, f64)> {
        let (a, b) = pairs.nodes(p);
        if a == b {
            return Some((f64::NEG_INFINITY, f64::INFINITY));
        }
        bvh.volume(a).overlap_interval_from(
            bvh.volume(b),
            self.now,
            self.stop_at(),
            self.t_end,
            &self.pair_axes,
        )
    }

    /// Whether pair `p`'s volumes overlap at `t`.
    pub(super) fn overlapping<V: Volume>(
        &self,
        pairs: &NodePairs,
        bvh: &Bvh<V>,
        p: NodePairId,
        t: f64,
    ) -> bool {
        let (a, b) = pairs.nodes(p);
        if a == b {
            return true;
        }
        let end = self.t_end.max(t);
        bvh.volume(a)
            .overlap_interval_from(bvh.volume(b), t, end, end, &self.pair_axes)
            .is_some_and(|(s, _)| s <= t)
    }

    /// When pair `p`'s next certificate fails, as seen at `t` (the current time); `None`: not
    /// before the horizon's end (or the short-circuit before it).
    fn next_certificate<V: Volume>(
        &self,
        pairs: &NodePairs,
        bvh: &Bvh<V>,
        p: NodePairId,
        t: f64,
    ) -> Option<f64> {
        let stop = self.stop_at();
        let interval = self.interval(pairs, bvh, p);
        let overlapping = interval.is_some_and(|(s, _)| s <= t);
        if pairs.is(p, OPEN) {
            match interval {
                _ if !overlapping => (self.eager || self.rebuilding).then_some(t),
                Some((_, e)) if self.eager && e < stop => {
                    // Overlapping at t: it stops strictly later.
                    Some(if e > t { e } else { after(t) })
                }
                _ => None,
            }
        } else {
            match interval {
                Some((s, _)) if s <= t || s < stop => Some(s.max(t)),
                _ => None,
            }
        }
    }

    /// Queues pair `p`'s next certificate as seen at `t` (the current time).
    pub(super) fn schedule<V: Volume>(
        &mut self,
        pairs: &mut NodePairs,
        bvh: &Bvh<V>,
        p: NodePairId,
        t: f64,
    ) {
        let s = self.next_certificate(pairs, bvh, p, t);
        self.queue_certificate(pairs, p, s);
    }

    /// Re-times pairs `ps` at `t` exactly as [`schedule`](Self::schedule) would one by one, in
    /// order; the certificate times are computed in parallel, [`BATCH`] pairs at a time.
    pub(super) fn schedule_batch<V: Volume>(
        &mut self,
        pairs: &mut NodePairs,
        bvh: &Bvh<V>,
        ps: &[NodePairId],
        t: f64,
    ) {
        let mut when = std::mem::take(&mut self.scratch_when);
        for chunk in ps.chunks(BATCH) {
            let (this, shared) = (&*self, &*pairs);
            chunk
                .par_iter()
                .with_min_len(PAR_MIN_LEN)
                .map_init(
                    || zone!("list_task"),
                    |_, &p| this.next_certificate(shared, bvh, p, t),
                )
                .collect_into_vec(&mut when);
            for (&p, &s) in chunk.iter().zip(&when) {
                self.queue_certificate(pairs, p, s);
            }
        }
        self.scratch_when = when;
    }

    /// Queues pair `p`'s certificate at `s`, or drops it for `None`, noting the pair as cut
    /// short when the certificate stopped at the short-circuit rather than the horizon's end.
    fn queue_certificate(&mut self, pairs: &mut NodePairs, p: NodePairId, s: Option<f64>) {
        match s {
            Some(s) => self.queue.update(p.event(), s),
            None => {
                self.queue.remove(p.event());
                let waits = self.eager || !pairs.is(p, OPEN);
                if waits && self.stop < self.t_end && !pairs.is(p, CUT) {
                    pairs.set(p, CUT, true);
                    self.cut.push(p);
                }
            }
        }
    }

    /// Heap bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.cut.capacity() * 4 + self.queue.len() * 20
    }
}
