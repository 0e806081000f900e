//! Penalty-layer super-events (thesis §8.1): one event per layer ticks, at the multiples of the
//! layer's clock, every pair that has the layer active.
//!
//! Members are kept sorted by pair key. The contact subsystem computes every member's impulse
//! from the state before the tick and applies them in member order, and each layer's event id is
//! fresh (layer `l + 1` always pops after layer `l` at equal times), so the trajectory does not
//! depend on pair ids, on which broad phase found the pairs, or on the thread count.

use crate::events::{EventKind, EventQueue, EventTable};
use crate::ids::EventId;
use crate::kds::swept_boxes::PairKey;

/// A pair with the layer active.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Member {
    /// The pair's key: the canonical order of members.
    pub(super) key: PairKey,
    /// The pair's id in the contact subsystem.
    pub(super) pair: u32,
}

/// One layer's event and members.
#[derive(Debug)]
struct Layer {
    event: EventId,
    clock: f64,
    /// The tick the event is queued for, while `queued`.
    tick: u64,
    queued: bool,
    members: Vec<Member>,
}

/// Every layer's super-event (index `l - 1`), created on first use.
#[derive(Debug, Default)]
pub(super) struct LayerEvents {
    layers: Vec<Layer>,
}

/// The first multiple of `h` strictly after `t`, as a tick count.
fn first_tick_after(t: f64, h: f64) -> u64 {
    let mut tick = (t / h).floor() as u64 + 1;
    while tick as f64 * h <= t {
        tick += 1;
    }
    tick
}

impl LayerEvents {
    /// Adds `member` to layer `l` (clock `h`) at time `t`; the layer's event is queued at the
    /// first multiple of `h` after `t` unless it is already queued.
    pub(super) fn join(
        &mut self,
        l: u32,
        h: f64,
        member: Member,
        t: f64,
        events: &mut EventTable,
        queue: &mut EventQueue,
    ) {
        while self.layers.len() < l as usize {
            let next = self.layers.len() as u32 + 1;
            self.layers.push(Layer {
                event: events.insert_fresh(EventKind::Penalty, next).id,
                clock: f64::NAN,
                tick: 0,
                queued: false,
                members: Vec::new(),
            });
        }
        let layer = &mut self.layers[l as usize - 1];
        layer.clock = h;
        if let Err(at) = layer.members.binary_search_by_key(&member.key, |m| m.key) {
            layer.members.insert(at, member);
        }
        if !layer.queued {
            layer.tick = first_tick_after(t, h);
            layer.queued = true;
            queue.push(layer.event, layer.tick as f64 * h);
        }
    }

    /// Takes layer `l`'s members for a tick; hand them back with [`finish_tick`](Self::finish_tick).
    pub(super) fn take_members(&mut self, l: u32) -> Vec<Member> {
        let layer = &mut self.layers[l as usize - 1];
        layer.queued = false;
        std::mem::take(&mut layer.members)
    }

    /// Returns the members that stay after a tick and queues the next tick if any remain.
    pub(super) fn finish_tick(&mut self, l: u32, members: Vec<Member>, queue: &mut EventQueue) {
        let layer = &mut self.layers[l as usize - 1];
        layer.members = members;
        if !layer.members.is_empty() {
            layer.tick += 1;
            layer.queued = true;
            queue.push(layer.event, layer.tick as f64 * layer.clock);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(v: u32) -> Member {
        Member {
            key: PairKey::VertexTriangle(v, 0),
            pair: 10 + v,
        }
    }

    #[test]
    fn members_stay_sorted_by_key_and_unique() {
        let (mut events, mut queue) = (EventTable::new(), EventQueue::new());
        let mut layers = LayerEvents::default();
        for v in [5, 1, 3, 1] {
            layers.join(1, 0.5, member(v), 0.2, &mut events, &mut queue);
        }
        let got = layers.take_members(1);
        assert_eq!(got, vec![member(1), member(3), member(5)]);
    }

    #[test]
    fn a_layer_is_queued_once_at_the_next_multiple_of_its_clock() {
        let (mut events, mut queue) = (EventTable::new(), EventQueue::new());
        let mut layers = LayerEvents::default();
        layers.join(2, 0.25, member(1), 0.5, &mut events, &mut queue);
        layers.join(2, 0.25, member(2), 0.6, &mut events, &mut queue);
        assert_eq!(queue.len(), 1);
        let (id, t) = queue.pop().unwrap();
        assert_eq!(t, 0.75, "strictly after the activation time");
        assert_eq!(events.payload(id), 2);
        let members = layers.take_members(2);
        layers.finish_tick(2, members, &mut queue);
        assert_eq!(queue.pop().unwrap().1, 1.0);
        layers.finish_tick(2, Vec::new(), &mut queue);
        assert!(queue.is_empty(), "an empty layer is not queued");
    }

    #[test]
    fn deeper_layers_pop_later_at_equal_times() {
        let (mut events, mut queue) = (EventTable::new(), EventQueue::new());
        let reused = events.insert(EventKind::Certificate, 0);
        let _ = events.remove(reused);
        let mut layers = LayerEvents::default();
        layers.join(3, 0.5, member(1), 0.0, &mut events, &mut queue);
        layers.join(1, 0.5, member(1), 0.0, &mut events, &mut queue);
        let order: Vec<u32> = std::iter::from_fn(|| queue.pop())
            .map(|(id, _)| events.payload(id))
            .collect();
        assert_eq!(order, vec![1, 3]);
    }
}
