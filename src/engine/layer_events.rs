//! Penalty-layer events: by default super-events (thesis §8.1), one event per layer that ticks,
//! at the multiples of the layer's clock, every pair that has the layer active; with
//! `speed.layer_super_events` off, one event per pair and layer on the same clocks.
//!
//! Both are *groups*: an event, a clock, and members kept sorted by pair key. The contact
//! subsystem computes every member's impulse from the state before the tick and applies them in
//! member order. A layer group's event id is fresh (layer `l + 1` always pops after layer `l` at
//! equal times), so with super-events the trajectory does not depend on pair ids, on which broad
//! phase found the pairs, or on the thread count. Per-pair groups tie by event id instead.

use crate::contact::ContactKey;
use crate::events::EventId;
use crate::events::{EventKind, EventQueue, EventTable};

/// A pair with the layer active.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Member {
    /// The pair's key: the canonical order of members.
    pub(super) key: ContactKey,
    /// The pair's id in the contact subsystem.
    pub(super) pair: u32,
}

/// One event ticking its members on one layer's clock.
#[derive(Clone, Debug)]
struct Group {
    event: EventId,
    layer: u32,
    clock: f64,
    /// The tick the event is queued for, while `queued`.
    tick: u64,
    queued: bool,
    members: Vec<Member>,
}

/// Every penalty group; an event's payload is its group's index plus one (with super-events,
/// the layer).
#[derive(Clone, Debug)]
pub(super) struct LayerEvents {
    /// Super-events: group `l - 1` is layer `l`. Otherwise one group per pair and layer.
    per_layer: bool,
    groups: Vec<Group>,
    /// Per-pair groups with no member, ready for reuse.
    free: Vec<u32>,
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
    /// No groups yet; `per_layer` chooses super-events (see the module docs).
    pub(super) fn new(per_layer: bool) -> Self {
        Self {
            per_layer,
            groups: Vec::new(),
            free: Vec::new(),
        }
    }

    /// A new group for layer `l` in a new slot, its event fresh (see the module docs).
    fn push_group(&mut self, l: u32, events: &mut EventTable) -> usize {
        let payload = self.groups.len() as u32 + 1;
        self.groups.push(Group {
            event: events.insert_fresh(EventKind::Penalty, payload).id,
            layer: l,
            clock: f64::NAN,
            tick: 0,
            queued: false,
            members: Vec::new(),
        });
        self.groups.len() - 1
    }

    /// Adds `member` to layer `l` (clock `h`) at time `t`; the group's event is queued at the
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
        let g = if self.per_layer {
            while self.groups.len() < l as usize {
                let next = self.groups.len() as u32 + 1;
                self.push_group(next, events);
            }
            l as usize - 1
        } else {
            match self.free.pop() {
                Some(g) => g as usize,
                None => self.push_group(l, events),
            }
        };
        let group = &mut self.groups[g];
        group.layer = l;
        group.clock = h;
        if let Err(at) = group.members.binary_search_by_key(&member.key, |m| m.key) {
            group.members.insert(at, member);
        }
        if !group.queued {
            group.tick = first_tick_after(t, h);
            group.queued = true;
            queue.push(group.event, group.tick as f64 * h);
        }
    }

    /// Takes the layer and members of the group whose event has payload `payload`, for a tick;
    /// hand them back with [`finish_tick`](Self::finish_tick).
    pub(super) fn take_members(&mut self, payload: u32) -> (u32, Vec<Member>) {
        let group = &mut self.groups[payload as usize - 1];
        group.queued = false;
        (group.layer, std::mem::take(&mut group.members))
    }

    /// Returns the members that stay after a tick and queues the next tick if any remain; a
    /// per-pair group left empty is freed.
    pub(super) fn finish_tick(
        &mut self,
        payload: u32,
        members: Vec<Member>,
        queue: &mut EventQueue,
    ) {
        let group = &mut self.groups[payload as usize - 1];
        group.members = members;
        if !group.members.is_empty() {
            group.tick += 1;
            group.queued = true;
            queue.push(group.event, group.tick as f64 * group.clock);
        } else if !self.per_layer {
            self.free.push(payload - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contact::PairKey;

    fn member(v: u32) -> Member {
        Member {
            key: ContactKey::Feature(PairKey::VertexTriangle(v, 0)),
            pair: 10 + v,
        }
    }

    #[test]
    fn members_stay_sorted_by_key_and_unique() {
        let (mut events, mut queue) = (EventTable::new(), EventQueue::new());
        let mut layers = LayerEvents::new(true);
        for v in [5, 1, 3, 1] {
            layers.join(1, 0.5, member(v), 0.2, &mut events, &mut queue);
        }
        let got = layers.take_members(1);
        assert_eq!(got, (1, vec![member(1), member(3), member(5)]));
    }

    #[test]
    fn a_layer_is_queued_once_at_the_next_multiple_of_its_clock() {
        let (mut events, mut queue) = (EventTable::new(), EventQueue::new());
        let mut layers = LayerEvents::new(true);
        layers.join(2, 0.25, member(1), 0.5, &mut events, &mut queue);
        layers.join(2, 0.25, member(2), 0.6, &mut events, &mut queue);
        assert_eq!(queue.len(), 1);
        let (id, t) = queue.pop().unwrap();
        assert_eq!(t, 0.75, "strictly after the activation time");
        assert_eq!(events.payload(id), 2);
        let (layer, members) = layers.take_members(2);
        assert_eq!(layer, 2);
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
        let mut layers = LayerEvents::new(true);
        layers.join(3, 0.5, member(1), 0.0, &mut events, &mut queue);
        layers.join(1, 0.5, member(1), 0.0, &mut events, &mut queue);
        let order: Vec<u32> = std::iter::from_fn(|| queue.pop())
            .map(|(id, _)| events.payload(id))
            .collect();
        assert_eq!(order, vec![1, 3]);
    }

    #[test]
    fn without_super_events_each_pair_has_its_own_event_and_empty_groups_are_reused() {
        let (mut events, mut queue) = (EventTable::new(), EventQueue::new());
        let mut layers = LayerEvents::new(false);
        layers.join(1, 0.25, member(1), 0.5, &mut events, &mut queue);
        layers.join(1, 0.25, member(2), 0.5, &mut events, &mut queue);
        layers.join(2, 0.125, member(1), 0.5, &mut events, &mut queue);
        assert_eq!(queue.len(), 3, "one event per pair and layer");
        let (id, t) = queue.pop().unwrap();
        assert_eq!(t, 0.625, "layer 2's clock");
        let payload = events.payload(id);
        let (layer, members) = layers.take_members(payload);
        assert_eq!((layer, members), (2, vec![member(1)]));
        layers.finish_tick(payload, Vec::new(), &mut queue);
        assert_eq!(queue.len(), 2, "the emptied group is not queued");
        layers.join(3, 0.0625, member(5), 0.625, &mut events, &mut queue);
        assert_eq!(events.len(), 3, "the freed group is reused");
        let (id, t) = queue.pop().unwrap();
        assert_eq!((events.payload(id), t), (payload, 0.6875));
    }
}
