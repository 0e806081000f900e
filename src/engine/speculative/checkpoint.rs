//! The saved state a speculative window rolls back to: everything an event can change.
//!
//! Vertex trajectories (`x`, `t`, `v`), the damping memories of the element families and of
//! drag, each force's tick count, the scripts' next keys, the event table and queue, the frame
//! counter and statistics, and the contact subsystem's pair table, layers and energy budget
//! ([`ContactCheckpoint`]). Masses, topology and clocks never change and are not copied. Saving
//! reuses the buffers of the previous save.

use glam::DVec3;

use crate::engine::contact::ContactCheckpoint;
use crate::engine::event_loop::EventLoop;
use crate::engine::Stats;
use crate::events::{EventQueue, EventTable};

/// A saved simulation state (see the module docs).
#[derive(Debug, Default)]
pub(super) struct Checkpoint {
    x: Vec<DVec3>,
    t: Vec<f64>,
    v: Vec<DVec3>,
    spring_memory: Vec<f64>,
    hinge_memory: Vec<f64>,
    drag_previous: Vec<DVec3>,
    ticks: Vec<u64>,
    next_key: Vec<usize>,
    events: EventTable,
    queue: EventQueue,
    next_frame: u64,
    time: f64,
    processed: u64,
    queue_sizes: u64,
    stats: Stats,
    contact: Option<ContactCheckpoint>,
}

impl Checkpoint {
    /// Saves `sim`'s state.
    pub(super) fn save(&mut self, sim: &EventLoop) {
        self.x.clone_from(&sim.model.state.x);
        self.t.clone_from(&sim.model.state.t);
        self.v.clone_from(&sim.model.state.v);
        self.spring_memory.clone_from(&sim.model.springs.memory);
        self.hinge_memory.clone_from(&sim.model.hinges.memory);
        self.drag_previous.clone_from(&sim.model.drag.previous);
        self.ticks.clone_from(&sim.ticks);
        self.next_key.clone_from(&sim.next_key);
        self.events.clone_from(&sim.events);
        self.queue.clone_from(&sim.queue);
        self.next_frame = sim.next_frame;
        self.time = sim.time;
        self.processed = sim.processed;
        self.queue_sizes = sim.queue_sizes;
        self.stats.clone_from(&sim.stats);
        self.contact = sim.contact.as_ref().map(|c| c.checkpoint());
    }

    /// Puts `sim` back into the saved state.
    pub(super) fn restore(&self, sim: &mut EventLoop) {
        sim.model.state.x.clone_from(&self.x);
        sim.model.state.t.clone_from(&self.t);
        sim.model.state.v.clone_from(&self.v);
        sim.model.springs.memory.clone_from(&self.spring_memory);
        sim.model.hinges.memory.clone_from(&self.hinge_memory);
        sim.model.drag.previous.clone_from(&self.drag_previous);
        sim.ticks.clone_from(&self.ticks);
        sim.next_key.clone_from(&self.next_key);
        sim.events.clone_from(&self.events);
        sim.queue.clone_from(&self.queue);
        sim.next_frame = self.next_frame;
        sim.time = self.time;
        sim.processed = self.processed;
        sim.queue_sizes = self.queue_sizes;
        sim.stats.clone_from(&self.stats);
        sim.kicked.clear();
        if let (Some(c), Some(saved)) = (&mut sim.contact, &self.contact) {
            c.restore(saved);
        }
    }
}
