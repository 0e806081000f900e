//! The trajectories of a speculative window: every vertex's piecewise-linear path from the
//! window's start to its end, recorded as the window runs and read back by the retrospective
//! check.
//!
//! A vertex moves in a straight line between two kicks, so its path over the window is its
//! position and velocity at the start plus one row per kick that changed its velocity. Kicks are
//! logged in event order as a structure of arrays (`vertex`, `time`, `x`, `v`), which is cheap to
//! append to. When the window ends, [`History::seal`] fits every vertex's moving volume in one
//! pass over the log (each path's chord is known from its ends, so the excursions from it can be
//! gathered in any order), and [`History::select`] sorts the rows of only the vertices the
//! broad phase kept (a stable counting sort, so each vertex's rows stay in time order) into the
//! segment arrays the narrow phase reads, one contiguous run of segments a vertex.

use glam::DVec3;
use rayon::prelude::*;

use crate::kds::kdop::{Dop18, PathFit};
use crate::state::VertexState;

/// Vertices per rayon task when a whole-mesh kick is looked for.
const PAR_MIN_LEN: usize = 4096;

/// Rows per rayon task, at least, when the log is read per vertex range.
const PAR_MIN_ROWS: usize = 1 << 16;

/// Slab axes of a [`Dop18`].
const AXES: usize = 9;

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
    /// After [`seal`](Self::seal): each vertex's path fit.
    fits: Vec<PathFit<AXES>>,
    /// After [`select`](Self::select): vertex `i`'s segments are `offset[i]..offset[i + 1]`
    /// (none if not selected), each a start time, the position then and the velocity from
    /// then on.
    offset: Vec<u32>,
    seg_time: Vec<f64>,
    seg_x: Vec<DVec3>,
    seg_v: Vec<DVec3>,
    /// After [`select`](Self::select): each selected vertex's largest speed in the window.
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

    /// Ends the window at `end` and fits every vertex's path. The first vertex whose velocity
    /// changed without being recorded is an error: its recorded path would not be the one it
    /// took.
    pub(super) fn seal(&mut self, state: &VertexState, end: f64) -> Result<(), u32> {
        self.end = end;
        if let Some(i) = (0..state.len()).find(|&i| state.v[i] != self.last_v[i]) {
            return Err(i as u32);
        }
        let (span, x0) = ((self.start, end), &self.x0);
        self.fits.clear();
        self.fits.par_extend(
            (0..state.len())
                .into_par_iter()
                .with_min_len(PAR_MIN_LEN)
                .map(|i| PathFit::new(span, x0[i], state.position_at(i, end))),
        );
        let (log_vertex, log_time, log_x) = (&self.log_vertex, &self.log_time, &self.log_x);
        let chunk = self.fits.len().div_ceil(self.tasks()).max(1);
        (self.fits.par_chunks_mut(chunk).enumerate()).for_each(|(c, fits)| {
            let first = c * chunk;
            for (r, &i) in log_vertex.iter().enumerate() {
                if let Some(fit) = (i as usize)
                    .checked_sub(first)
                    .and_then(|k| fits.get_mut(k))
                {
                    fit.add(log_time[r], log_x[r]);
                }
            }
        });
        Ok(())
    }

    /// How many tasks a pass over the log per vertex range is cut into: one a thread, each with
    /// a share of the log worth its scan.
    fn tasks(&self) -> usize {
        rayon::current_num_threads().clamp(1, 1 + self.log_vertex.len() / PAR_MIN_ROWS)
    }

    /// Vertex `i`'s volume over the window, grown by `pad` (after [`seal`](Self::seal)).
    pub(super) fn volume(&self, i: u32, pad: f64) -> Dop18 {
        self.fits[i as usize].volume(pad)
    }

    /// Vertex `i`'s position at the window's start.
    pub(super) fn start_position(&self, i: u32) -> DVec3 {
        self.x0[i as usize]
    }

    /// Sorts the paths of `vertices` (ascending, each once) out of the log, for
    /// [`path`](Self::path) (after [`seal`](Self::seal)).
    pub(super) fn select(&mut self, vertices: &[u32]) {
        let n = self.x0.len();
        self.offset.clear();
        self.offset.resize(n + 1, 0);
        for &i in vertices {
            self.offset[i as usize + 1] = 1;
        }
        for &i in &self.log_vertex {
            if self.offset[i as usize + 1] > 0 {
                self.offset[i as usize + 1] += 1;
            }
        }
        for i in 0..n {
            self.offset[i + 1] += self.offset[i];
        }
        let total = self.offset[n] as usize;
        self.seg_time.resize(total, 0.0);
        self.seg_x.resize(total, DVec3::ZERO);
        self.seg_v.resize(total, DVec3::ZERO);
        // One task a thread, each over a run of the selected vertices holding about as many
        // rows as the others: it scans the whole log and places its own vertices' rows, each
        // vertex's in log (so time) order. The result does not depend on how they are cut.
        let tasks = self.tasks();
        let offset = &self.offset;
        let cuts: Vec<usize> = (0..=tasks)
            .map(|c| {
                offset
                    .partition_point(|&o| (o as usize) < total * c / tasks)
                    .min(n)
            })
            .collect();
        let mut parts = Vec::with_capacity(tasks);
        let (mut time, mut x, mut v) = (
            &mut self.seg_time[..],
            &mut self.seg_x[..],
            &mut self.seg_v[..],
        );
        for c in 0..tasks {
            let (a, b) = (cuts[c], cuts[c + 1]);
            let rows = (offset[b] - offset[a]) as usize;
            let (t_here, t_rest) = std::mem::take(&mut time).split_at_mut(rows);
            let (x_here, x_rest) = std::mem::take(&mut x).split_at_mut(rows);
            let (v_here, v_rest) = std::mem::take(&mut v).split_at_mut(rows);
            parts.push((a..b, t_here, x_here, v_here));
            (time, x, v) = (t_rest, x_rest, v_rest);
        }
        let (start, x0, v0) = (self.start, &self.x0, &self.v0);
        let (log_vertex, log_time) = (&self.log_vertex, &self.log_time);
        let (log_x, log_v) = (&self.log_x, &self.log_v);
        parts.into_par_iter().for_each(|(vertices, time, x, v)| {
            let base = offset[vertices.start];
            // `next[i - start]`: where vertex i's next row goes; its first slot holds the start.
            let mut next: Vec<u32> = offset[vertices.clone()].iter().map(|o| o - base).collect();
            for i in vertices.clone() {
                if offset[i + 1] > offset[i] {
                    let slot = &mut next[i - vertices.start];
                    let k = *slot as usize;
                    (time[k], x[k], v[k]) = (start, x0[i], v0[i]);
                    *slot += 1;
                }
            }
            for (r, &i) in log_vertex.iter().enumerate() {
                let i = i as usize;
                if vertices.contains(&i) && offset[i + 1] > offset[i] {
                    let slot = &mut next[i - vertices.start];
                    let k = *slot as usize;
                    (time[k], x[k], v[k]) = (log_time[r], log_x[r], log_v[r]);
                    *slot += 1;
                }
            }
        });
        let (offset, seg_v) = (&self.offset, &self.seg_v);
        self.fastest.clear();
        self.fastest
            .par_extend((0..n).into_par_iter().with_min_len(PAR_MIN_LEN).map(|i| {
                let segments = &seg_v[offset[i] as usize..offset[i + 1] as usize];
                segments.iter().map(|v| v.length()).fold(0.0, f64::max)
            }));
    }

    /// The window `[start, end]`.
    pub(super) fn span(&self) -> (f64, f64) {
        (self.start, self.end)
    }

    /// Vertex `i`'s path (after [`select`](Self::select) with `i` among the vertices).
    pub(super) fn path(&self, i: u32) -> Path<'_> {
        let (a, b) = (
            self.offset[i as usize] as usize,
            self.offset[i as usize + 1] as usize,
        );
        debug_assert!(a < b, "vertex {i}'s path was not selected");
        Path {
            time: &self.seg_time[a..b],
            x: &self.seg_x[a..b],
            v: &self.seg_v[a..b],
            fastest: self.fastest[i as usize],
        }
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
        h.select(&[0, 1]);
        let p = h.path(0);
        assert_eq!(p.time, &[0.0, 1.0, 2.0]);
        assert_eq!(p.at(p.segment_at(1.5), 1.5), DVec3::new(1.5, 0.5, 0.0));
        assert_eq!(p.at(p.segment_at(3.0), 3.0), DVec3::new(2.0, 2.0, 0.0));
        assert_eq!(h.path(1).time, &[0.0, 1.5]);
        h.select(&[1]);
        assert_eq!(h.path(1).time, &[0.0, 1.5]);
        assert_eq!(h.path(1).x, &[DVec3::X, DVec3::X]);
    }

    #[test]
    fn a_vertex_volume_holds_its_path() {
        let mut state = two_vertices();
        let mut h = History::default();
        h.begin(&state, 0.0);
        state.apply_impulse(0, 1.0, DVec3::new(-2.0, 3.0, 0.0));
        h.record(&state, &[0]);
        state.apply_impulse(0, 2.0, DVec3::new(0.0, -6.0, 1.0));
        h.record(&state, &[0]);
        h.seal(&state, 3.0).unwrap();
        h.select(&[0]);
        let (p, vol) = (h.path(0), h.volume(0, 0.0));
        let other = |at: DVec3| Dop18::fit(&[at], &[at], 0.0, 3.0, 0.0);
        use crate::kds::kdop::Volume;
        for i in 0..=30 {
            let s = f64::from(i) / 10.0;
            let at = p.at(p.segment_at(s), s);
            // A point resting where the path passes at s meets the volume then.
            let (a, b) = vol.overlap_interval(&other(at), 0.0, 3.0).expect("meets");
            assert!(a <= s + 1e-9 && s <= b + 1e-9, "{s} outside [{a}, {b}]");
        }
        // Far from the path, it does not.
        assert!(vol
            .overlap_interval(&other(DVec3::new(0.0, 9.0, 0.0)), 0.0, 3.0)
            .is_none());
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
