//! Penalty-layer events: by default super-events (thesis §8.1), one event per layer that ticks,
//! at the multiples of the layer's clock, every pair that has the layer active; with
//! `speed.layer_super_events` off, one event per pair and layer on the same clocks.
//!
//! Both are *groups*: an event, a clock, and members kept sorted by pair key. The contact
//! subsystem computes every member's impulse from the state before the tick and applies them in
//! member order. A layer group's event id is fresh (layer `l + 1` always pops after layer `l` at
//! equal times), so with super-events the trajectory does not depend on pair ids, on which broad
//! phase found the pairs, or on the thread count.
//!
//! Per-pair events due at one instant tick together ([`LayerEvents::due_together`]): those of
//! the shallowest layer due then as one tick, their members merged in key order, the others
//! queued back at the same time. Ticks at one instant read the same positions whatever their
//! order, but not the same velocities, and restitution, friction and work closure read
//! velocities: ticked one by one in event-id order, the per-pair events gave a trajectory that
//! depended on the order their pairs were found. Ticked together they tick exactly the members a
//! super-event ticks, in its order, so both kinds give the same trajectory and differ only in
//! how many events the queue holds.

use crate::events::EventId;
use crate::events::{EventKind, EventQueue, EventTable};
use crate::penalty::ContactKey;

/// A pair with the layer active.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Member {
    /// The pair's key: the canonical order of members.
    pub(super) key: ContactKey,
    /// The pair's id in the contact subsystem.
    pub(super) pair: u32,
    /// Whether the member's last tick of this layer applied an impulse (false when it joins).
    pub(super) acted: bool,
    /// Whether any of the member's ticks of this layer since it joined applied an impulse.
    pub(super) has_acted: bool,
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
    /// The tick in progress ([`Self::take_members`] to [`Self::finish_tick`]): the groups whose
    /// events it ticks, each with its member's key, in key order (a super-event's one group
    /// under its first member's key).
    ticking: Vec<(ContactKey, u32)>,
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
            ticking: Vec::new(),
        }
    }

    /// Pops every penalty event due at `t` on top of `queue` and leaves in `batch` the payloads of
    /// those to tick together with the event of `payload` just popped: with super-events, that
    /// event alone; per pair, every per-pair event of the shallowest layer due at `t` (those of
    /// deeper layers are queued back at `t`, to tick after it). See the module docs.
    pub(super) fn due_together(
        &self,
        payload: u32,
        t: f64,
        events: &EventTable,
        queue: &mut EventQueue,
        batch: &mut Vec<u32>,
    ) {
        batch.clear();
        batch.push(payload);
        if self.per_layer {
            return;
        }
        while let Some((id, due)) = queue.peek() {
            if due != t || events.kind(id) != EventKind::Penalty {
                break;
            }
            queue.pop();
            batch.push(events.payload(id));
        }
        let layer_of = |p: &u32| self.groups[*p as usize - 1].layer;
        let Some(shallowest) = batch.iter().map(layer_of).min() else {
            return;
        };
        batch.retain(|p| {
            let now = layer_of(p) == shallowest;
            if !now {
                queue.push(self.groups[*p as usize - 1].event, t);
            }
            now
        });
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

    /// Takes the layer and members of the groups whose events have payloads `batch` (from
    /// [`Self::due_together`]: one layer's, due at one instant), merged in key order, for a tick;
    /// hand back those that stay with [`finish_tick`](Self::finish_tick).
    pub(super) fn take_members(&mut self, batch: &[u32]) -> (u32, Vec<Member>) {
        self.ticking.clear();
        let mut members = Vec::new();
        for &payload in batch {
            let group = &mut self.groups[payload as usize - 1];
            group.queued = false;
            if let Some(first) = group.members.first() {
                self.ticking.push((first.key, payload));
            }
            if members.is_empty() {
                members = std::mem::take(&mut group.members);
            } else {
                members.append(&mut group.members);
            }
        }
        if batch.len() > 1 {
            self.ticking.sort_unstable_by_key(|&(key, _)| key);
            members.sort_unstable_by_key(|m| m.key);
        }
        let layer = batch
            .first()
            .map_or(1, |&p| self.groups[p as usize - 1].layer);
        (layer, members)
    }

    /// Returns the members of the tick in progress that stay (`members`, in key order) and
    /// queues the next tick of every group that keeps a member; a per-pair group left empty is
    /// freed.
    pub(super) fn finish_tick(&mut self, mut members: Vec<Member>, queue: &mut EventQueue) {
        let ticking = std::mem::take(&mut self.ticking);
        if let [(_, payload)] = ticking[..] {
            self.requeue(payload, members, queue);
        } else {
            // One member per per-pair group, both lists in key order.
            let mut staying = members.drain(..).peekable();
            for &(key, payload) in &ticking {
                let group = &mut self.groups[payload as usize - 1];
                if let Some(member) = staying.next_if(|m| m.key == key) {
                    group.members.push(member);
                }
                let kept = std::mem::take(&mut group.members);
                self.requeue(payload, kept, queue);
            }
        }
        self.ticking = ticking;
    }

    /// Gives group `payload` its `members` back after a tick and queues its next tick if any
    /// remain; a per-pair group left empty is freed.
    fn requeue(&mut self, payload: u32, members: Vec<Member>, queue: &mut EventQueue) {
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
    use crate::penalty::PairKey;

    fn member(v: u32) -> Member {
        Member {
            key: ContactKey::Feature(PairKey::VertexTriangle(v, 0)),
            pair: 10 + v,
            acted: false,
            has_acted: false,
        }
    }

    #[test]
    fn members_stay_sorted_by_key_and_unique() {
        let (mut events, mut queue) = (EventTable::new(), EventQueue::new());
        let mut layers = LayerEvents::new(true);
        for v in [5, 1, 3, 1] {
            layers.join(1, 0.5, member(v), 0.2, &mut events, &mut queue);
        }
        let got = layers.take_members(&[1]);
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
        let (layer, members) = layers.take_members(&[2]);
        assert_eq!(layer, 2);
        layers.finish_tick(members, &mut queue);
        assert_eq!(queue.pop().unwrap().1, 1.0);
        let _ = layers.take_members(&[2]);
        layers.finish_tick(Vec::new(), &mut queue);
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
        let (layer, members) = layers.take_members(&[payload]);
        assert_eq!((layer, members), (2, vec![member(1)]));
        layers.finish_tick(Vec::new(), &mut queue);
        assert_eq!(queue.len(), 2, "the emptied group is not queued");
        layers.join(3, 0.0625, member(5), 0.625, &mut events, &mut queue);
        assert_eq!(events.len(), 3, "the freed group is reused");
        let (id, t) = queue.pop().unwrap();
        assert_eq!((events.payload(id), t), (payload, 0.6875));
    }

    #[test]
    fn per_pair_events_due_at_one_instant_tick_together_shallowest_layer_first() {
        let (mut events, mut queue) = (EventTable::new(), EventQueue::new());
        let mut layers = LayerEvents::new(false);
        // Layers 1 and 2 on clocks 0.5 and 0.25 both tick at 0.5; pair 3 joins layer 2 first.
        layers.join(2, 0.25, member(3), 0.3, &mut events, &mut queue);
        layers.join(1, 0.5, member(2), 0.3, &mut events, &mut queue);
        layers.join(1, 0.5, member(1), 0.3, &mut events, &mut queue);
        let later = events.insert(EventKind::Certificate, 0).id;
        queue.push(later, 0.75);
        let mut batch = Vec::new();
        let (id, t) = queue.pop().unwrap();
        assert_eq!(t, 0.5);
        layers.due_together(events.payload(id), t, &events, &mut queue, &mut batch);
        let (layer, members) = layers.take_members(&batch);
        assert_eq!((layer, members.clone()), (1, vec![member(1), member(2)]));
        assert_eq!(queue.len(), 2, "layer 2's event is queued back");
        layers.finish_tick(vec![members[1]], &mut queue);
        let (id, t) = queue.pop().unwrap();
        assert_eq!(t, 0.5, "layer 2 ticks next, at the same instant");
        layers.due_together(events.payload(id), t, &events, &mut queue, &mut batch);
        assert_eq!(layers.take_members(&batch), (2, vec![member(3)]));
        layers.finish_tick(Vec::new(), &mut queue);
        let due: Vec<(u32, f64)> = std::iter::from_fn(|| queue.pop())
            .map(|(id, t)| (events.payload(id), t))
            .collect();
        // Pair 2 stays in layer 1: its group (payload 2) ticks next at 1.0.
        assert_eq!(due, vec![(0, 0.75), (2, 1.0)]);
        assert_eq!(layers.free.len(), 2, "the groups of pairs 1 and 3 are free");
    }
}
