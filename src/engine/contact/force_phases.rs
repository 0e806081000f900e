//! The error a contact kick makes in the other forces' ticks (`contact.closure_forces`).
//!
//! A force on its own clock `h` kicks a vertex with `h f(x_k)` at its ticks `t_k` and lets it
//! drift in between; its ticks' work then telescopes, interval by interval, into the exact
//! change of its potential (the trapezoid rule `-(f_k + f_{k+1})/2 . (x_{k+1} - x_k)`) up to a
//! bounded oscillation. A contact impulse that changes the vertex's velocity by `dv` at
//! `t_k + s`, between two of the force's ticks, breaks that: the vertex is displaced by
//! `(h - s) dv` within the interval but the force's next tick counts the whole `dv`, which adds
//! `f . dv (s - h/2)` to the energy, a random amount up to `|f| |dv| h / 2`. Penalty layers
//! kick hard and often inside an impact, so the springs and gravity of a bouncing object gain
//! or lose energy at every impact, and a scene that bounces on compounds it.
//!
//! This table keeps, for every free vertex and every force that kicks it, the force's last
//! tick (its time and the velocity it gave the vertex, `h f / m`), so that the work closure can
//! add the error of each layer impulse to the pair's open work and take it out with the rest.
//! It reads the state and never writes it.

use std::sync::Arc;

use glam::DVec3;

use crate::state::VertexState;

/// Which free vertices each force kicks, and which forces kick each vertex (fixed for a run).
#[derive(Debug)]
struct Slots {
    /// Per force: its clock.
    clock: Vec<f64>,
    /// Per force `f`: its slots `force_start[f] .. force_start[f + 1]`, one per free vertex it
    /// kicks, in the order of `vertex`.
    force_start: Vec<usize>,
    /// Per slot: its vertex.
    vertex: Vec<u32>,
    /// Per slot: its force.
    force: Vec<u32>,
    /// Per vertex `v`: its slots are `vertex_slots[vertex_start[v] .. vertex_start[v + 1]]`.
    vertex_start: Vec<usize>,
    vertex_slots: Vec<u32>,
}

/// Each force's last tick on each vertex it kicks (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct ForcePhases {
    slots: Arc<Slots>,
    /// Per slot: the time of the force's last tick (`NaN` before its first).
    tick: Vec<f64>,
    /// Per slot: the velocity that tick gave the vertex.
    dv: Vec<DVec3>,
    /// Scratch: the velocities of the ticking force's vertices before its tick.
    before: Vec<DVec3>,
}

impl ForcePhases {
    /// The table for `vertices` vertices and the forces `forces` (each its clock and the
    /// vertices it kicks; vertices with zero inverse mass in `state` are left out).
    pub(super) fn new(forces: &[(f64, Vec<u32>)], state: &VertexState) -> Self {
        let n = state.len();
        let mut force_start = Vec::with_capacity(forces.len() + 1);
        let (mut vertex, mut force) = (Vec::new(), Vec::new());
        let mut count = vec![0usize; n + 1];
        for (f, (_, verts)) in forces.iter().enumerate() {
            force_start.push(vertex.len());
            for &v in verts.iter().filter(|&&v| state.inv_mass[v as usize] > 0.0) {
                vertex.push(v);
                force.push(f as u32);
                count[v as usize + 1] += 1;
            }
        }
        force_start.push(vertex.len());
        for v in 0..n {
            count[v + 1] += count[v];
        }
        let vertex_start = count.clone();
        let mut vertex_slots = vec![0u32; vertex.len()];
        for (slot, &v) in vertex.iter().enumerate() {
            vertex_slots[count[v as usize]] = slot as u32;
            count[v as usize] += 1;
        }
        let slots = vertex.len();
        Self {
            slots: Arc::new(Slots {
                clock: forces.iter().map(|&(h, _)| h).collect(),
                force_start,
                vertex,
                force,
                vertex_start,
                vertex_slots,
            }),
            tick: vec![f64::NAN; slots],
            dv: vec![DVec3::ZERO; slots],
            before: Vec::new(),
        }
    }

    /// Call just before force `f` ticks: notes its vertices' velocities.
    pub(super) fn before_tick(&mut self, f: usize, state: &VertexState) {
        let range = self.slots.force_start[f]..self.slots.force_start[f + 1];
        self.before.clear();
        let vertex = &self.slots.vertex[range];
        self.before
            .extend(vertex.iter().map(|&v| state.v[v as usize]));
    }

    /// Call just after force `f` ticked at `t`: keeps the velocity it gave each vertex.
    pub(super) fn after_tick(&mut self, f: usize, state: &VertexState, t: f64) {
        let range = self.slots.force_start[f]..self.slots.force_start[f + 1];
        for (k, slot) in range.enumerate() {
            let v = self.slots.vertex[slot] as usize;
            self.tick[slot] = t;
            self.dv[slot] = state.v[v] - self.before[k];
        }
    }

    /// The energy that an impulse `impulse` on vertex `v` at `t` adds to the ticks of the
    /// forces that kick `v`: `sum f . dv (s - h/2)` over them, `s` the time since each one's
    /// last tick, `f` its force then, `dv = impulse / m`. Linear in `impulse`.
    pub(super) fn error(&self, v: u32, impulse: DVec3, t: f64) -> f64 {
        let s = &self.slots;
        let slots = &s.vertex_slots[s.vertex_start[v as usize]..s.vertex_start[v as usize + 1]];
        let mut error = 0.0;
        for &slot in slots {
            let slot = slot as usize;
            let since = t - self.tick[slot];
            // NaN before the force's first tick: it has done nothing yet.
            if since >= 0.0 {
                let h = s.clock[s.force[slot] as usize];
                // f . impulse / m with f = m dv / h.
                error += self.dv[slot].dot(impulse) / h * (since - 0.5 * h);
            }
        }
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::VertexKind;

    fn state() -> VertexState {
        VertexState {
            x: vec![DVec3::ZERO; 3],
            t: vec![0.0; 3],
            v: vec![DVec3::ZERO; 3],
            mass: vec![2.0; 3],
            inv_mass: vec![0.5, 0.5, 0.0],
            kind: vec![VertexKind::Free; 3],
        }
    }

    #[test]
    fn a_kick_half_way_between_ticks_makes_no_error_and_the_error_is_linear_in_phase() {
        let mut state = state();
        // Force 0 (clock 0.1) kicks vertices 0, 1 and 2 (fixed: left out); force 1 (clock
        // 0.4) kicks vertex 1.
        let mut phases = ForcePhases::new(&[(0.1, vec![0, 1, 2]), (0.4, vec![1])], &state);
        assert_eq!(phases.error(0, DVec3::X, 1.0), 0.0, "no tick yet");
        phases.before_tick(0, &state);
        state.v[0] = DVec3::new(3.0, 0.0, 0.0);
        state.v[1] = DVec3::new(0.0, 1.0, 0.0);
        phases.after_tick(0, &state, 0.2);
        // f = m dv / h = 60 along x on vertex 0; an impulse J gives f . J / m (s - h/2).
        let j = DVec3::new(2.0, 5.0, 0.0);
        assert!(phases.error(0, j, 0.25).abs() < 1e-12, "half way");
        let e = |s: f64| phases.error(0, j, 0.2 + s);
        assert!((e(0.1) - 60.0 * 1.0 * 0.05).abs() < 1e-12, "{}", e(0.1));
        assert!((e(0.0) + e(0.1)).abs() < 1e-12);
        // Vertex 1 only sees force 0 until force 1 ticks.
        assert!((phases.error(1, j, 0.3) - 50.0 * 0.05).abs() < 1e-12);
        phases.before_tick(1, &state);
        state.v[1] += DVec3::new(0.0, 0.0, 4.0);
        phases.after_tick(1, &state, 0.4);
        let z = DVec3::Z;
        // Force 1: f = 2 * 4 / 0.4 = 20 along z, at s = 0.1 of h = 0.4.
        assert!((phases.error(1, z, 0.5) - 20.0 * 0.5 * (0.1 - 0.2)).abs() < 1e-12);
        assert_eq!(phases.error(2, j, 0.5), 0.0, "a fixed vertex has no slots");
    }
}
