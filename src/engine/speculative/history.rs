//! The trajectories of a speculative window: every vertex's piecewise-linear path from the
//! window's start to its end, recorded as the window runs and read back by the retrospective
//! check.
//!
//! A vertex moves in a straight line between two kicks, so its path over the window is its
//! position and velocity at the start plus one row per kick that changed its velocity. Kicks are
//! logged in event order as a structure of arrays (`vertex`, `time`, `x`, `v`), which is cheap to
//! append to; [`History::seal`] then sorts the rows by vertex (a stable counting sort, so each
//! vertex's rows stay in time order) into the segment arrays the check reads, one contiguous run
//! of segments a vertex.

use glam::DVec3;
use rayon::prelude::*;

use crate::state::VertexState;

/// Vertices per rayon task when a whole-mesh kick is looked for.
const PAR_MIN_LEN: usize = 4096;

/// One window's trajectories (see the module docs).
#[derive(Debug, Default)]
pub(super) struct History {
    /// The window: `[start, end]`.
    start: f64,
    end: f64,
    /// Per vertex: the velocity last recorded (a kick that leaves it unchanged is not a row).
    last_v: Vec<DVec3>,
    /// Per vertex: position and velocity at the window's start.
    x0: Vec<DVec3>,
    v0: Vec<DVec3>,
    /// The log, one row per velocity change, in event order.
    log_vertex: Vec<u32>,
    log_time: Vec<f64>,
    log_x: Vec<DVec3>,
    log_v: Vec<DVec3>,
    /// After [`seal`](Self::seal): vertex `i`'s segments are `offset[i]..offset[i + 1]`, each a
    /// start time, the position then and the velocity from then on.
    offset: Vec<u32>,
    seg_time: Vec<f64>,
    seg_x: Vec<DVec3>,
    seg_v: Vec<DVec3>,
    /// After [`seal`](Self::seal): each vertex's largest speed in the window.
    fastest: Vec<f64>,
    /// Scratch: the vertices a whole-mesh kick changed.
    changed: Vec<u32>,
}

/// One vertex's segments in a sealed history: parallel slices, in time order.
#[derive(Clone, Copy, Debug)]
pub(super) struct Path<'a> {
    /// Start time of each segment (the first is the window's start).
    pub(super) time: &'a [f64],
    /// Position at each segment's start.
    pub(super) x: &'a [DVec3],
    /// Velocity along each segment.
    pub(super) v: &'a [DVec3],
    /// The largest speed along the path.
    pub(super) fastest: f64,
}

impl Path<'_> {
    /// The segment in effect at time `s`: the last one starting at or before it.
    pub(super) fn segment_at(&self, s: f64) -> usize {
        self.time.partition_point(|&u| u <= s).max(1) - 1
    }

    /// Position at time `s` on segment `k`.
    #[inline]
    pub(super) fn at(&self, k: usize, s: f64) -> DVec3 {
        self.x[k] + (s - self.time[k]) * self.v[k]
    }

    /// Start of the segment after `k`, or infinity.
    #[inline]
    pub(super) fn next_break(&self, k: usize) -> f64 {
        self.time.get(k + 1).copied().unwrap_or(f64::INFINITY)
    }
}

impl History {
    /// Starts recording a window beginning at `start` from `state`.
    pub(super) fn begin(&mut self, state: &VertexState, start: f64) {
        self.start = start;
        self.end = start;
        state.positions_at(start, &mut self.x0);
        self.v0.clone_from(&state.v);
        self.last_v.clone_from(&state.v);
        self.log_vertex.clear();
        self.log_time.clear();
        self.log_x.clear();
        self.log_v.clear();
    }

    /// Records the velocity changes of `vertices` (a kick's stencil) made by the event just
    /// processed.
    pub(super) fn record(&mut self, state: &VertexState, vertices: &[u32]) {
        for &i in vertices {
            self.record_one(state, i);
        }
    }

    /// Records the velocity changes of every vertex (a whole-mesh kick); the changed vertices
    /// are found on the thread pool, in vertex order.
    pub(super) fn record_all(&mut self, state: &VertexState) {
        let last = &self.last_v;
        self.changed.clear();
        self.changed.par_extend(
            (0..state.len() as u32)
                .into_par_iter()
                .with_min_len(PAR_MIN_LEN)
                .filter(|&i| state.v[i as usize] != last[i as usize]),
        );
        let changed = std::mem::take(&mut self.changed);
        self.record(state, &changed);
        self.changed = changed;
    }

    fn record_one(&mut self, state: &VertexState, i: u32) {
        let k = i as usize;
        if state.v[k] == self.last_v[k] {
            return;
        }
        self.last_v[k] = state.v[k];
        self.log_vertex.push(i);
        self.log_time.push(state.t[k]);
        self.log_x.push(state.x[k]);
        self.log_v.push(state.v[k]);
    }

    /// The number of velocity changes recorded so far.
    pub(super) fn len(&self) -> usize {
        self.log_vertex.len()
    }

    /// Forgets every change recorded after the first `len`, going back to where `state` (saved
    /// then) stood.
    pub(super) fn rewind(&mut self, len: usize, state: &VertexState) {
        self.log_vertex.truncate(len);
        self.log_time.truncate(len);
        self.log_x.truncate(len);
        self.log_v.truncate(len);
        self.last_v.clone_from(&state.v);
    }

    /// Ends the window at `end` and sorts the log into per-vertex segments. The first vertex
    /// whose velocity changed without being recorded is an error: its recorded path would not
    /// be the one it took.
    pub(super) fn seal(&mut self, state: &VertexState, end: f64) -> Result<(), u32> {
        self.end = end;
        if let Some(i) = (0..state.len()).find(|&i| state.v[i] != self.last_v[i]) {
            return Err(i as u32);
        }
        let n = self.x0.len();
        self.offset.clear();
        self.offset.resize(n + 1, 0);
        for &i in &self.log_vertex {
            self.offset[i as usize + 1] += 1;
        }
        for i in 0..n {
            self.offset[i + 1] += self.offset[i] + 1;
        }
        let total = self.offset[n] as usize;
        self.seg_time.resize(total, 0.0);
        self.seg_x.resize(total, DVec3::ZERO);
        self.seg_v.resize(total, DVec3::ZERO);
        // `next[i]`: where vertex i's next row goes; its first slot holds the start.
        let mut next: Vec<u32> = self.offset[..n].to_vec();
        for (i, slot) in next.iter_mut().enumerate() {
            let k = *slot as usize;
            (self.seg_time[k], self.seg_x[k], self.seg_v[k]) = (self.start, self.x0[i], self.v0[i]);
            *slot += 1;
        }
        for r in 0..self.log_vertex.len() {
            let i = self.log_vertex[r] as usize;
            let k = next[i] as usize;
            self.seg_time[k] = self.log_time[r];
            self.seg_x[k] = self.log_x[r];
            self.seg_v[k] = self.log_v[r];
            next[i] += 1;
        }
        let (offset, seg_v) = (&self.offset, &self.seg_v);
        self.fastest.clear();
        self.fastest
            .par_extend((0..n).into_par_iter().with_min_len(PAR_MIN_LEN).map(|i| {
                let segments = &seg_v[offset[i] as usize..offset[i + 1] as usize];
                segments.iter().map(|v| v.length()).fold(0.0, f64::max)
            }));
        Ok(())
    }

    /// The window `[start, end]`.
    pub(super) fn span(&self) -> (f64, f64) {
        (self.start, self.end)
    }

    /// Vertex `i`'s path (after [`seal`](Self::seal)).
    pub(super) fn path(&self, i: u32) -> Path<'_> {
        let (a, b) = (
            self.offset[i as usize] as usize,
            self.offset[i as usize + 1] as usize,
        );
        Path {
            time: &self.seg_time[a..b],
            x: &self.seg_x[a..b],
            v: &self.seg_v[a..b],
            fastest: self.fastest[i as usize],
        }
    }

    /// Appends to `times` and `points` the corners of vertex `i`'s path: the times and
    /// positions of its segments' starts, then of the window's end.
    pub(super) fn corners(&self, i: u32, times: &mut Vec<f64>, points: &mut Vec<DVec3>) {
        let path = self.path(i);
        times.extend_from_slice(path.time);
        points.extend_from_slice(path.x);
        let last = path.time.len() - 1;
        times.push(self.end);
        points.push(path.at(last, self.end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::VertexKind;

    fn two_vertices() -> VertexState {
        VertexState {
            x: vec![DVec3::ZERO, DVec3::X],
            t: vec![0.0, 0.0],
            v: vec![DVec3::X, DVec3::ZERO],
            mass: vec![1.0; 2],
            inv_mass: vec![1.0; 2],
            kind: vec![VertexKind::Free; 2],
        }
    }

    #[test]
    fn paths_follow_the_kicks_in_time_order() {
        let mut state = two_vertices();
        let mut h = History::default();
        h.begin(&state, 0.0);
        state.apply_impulse(0, 1.0, DVec3::Y);
        h.record(&state, &[0, 1]);
        state.apply_impulse(1, 1.5, DVec3::Z);
        state.apply_impulse(0, 2.0, -DVec3::X);
        h.record_all(&state);
        h.seal(&state, 3.0).unwrap();
        let p = h.path(0);
        assert_eq!(p.time, &[0.0, 1.0, 2.0]);
        assert_eq!(p.at(p.segment_at(1.5), 1.5), DVec3::new(1.5, 0.5, 0.0));
        assert_eq!(p.at(p.segment_at(3.0), 3.0), DVec3::new(2.0, 2.0, 0.0));
        assert_eq!(h.path(1).time, &[0.0, 1.5]);
        let (mut times, mut corners) = (Vec::new(), Vec::new());
        h.corners(1, &mut times, &mut corners);
        assert_eq!(times, vec![0.0, 1.5, 3.0]);
        assert_eq!(corners, vec![DVec3::X, DVec3::X, DVec3::new(1.0, 0.0, 1.5)]);
    }

    #[test]
    fn a_kick_left_unrecorded_is_reported() {
        let mut state = two_vertices();
        let mut h = History::default();
        h.begin(&state, 0.0);
        state.apply_impulse(1, 0.5, DVec3::Y);
        h.record(&state, &[0]);
        assert_eq!(h.seal(&state, 1.0), Err(1));
    }
}
