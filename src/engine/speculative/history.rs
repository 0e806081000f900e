//! The trajectories of a speculative window: every vertex's piecewise-linear path from the
//! window's start to its end, recorded as the window runs and read back by the retrospective
//! check.
//!
//! A vertex moves in a straight line between two kicks, so its path over the window is its
//! position at the start and at each kick that changed its velocity. A cloth vertex is kicked
//! by every tick of its mesh's stretching and bending, thousands of times a window, and nearly
//! in a line: recording every kick would stream gigabytes a window through memory. Instead the
//! path is **simplified as it is recorded**, to within a set deviation of the one taken:
//! each vertex keeps one open segment from an anchor and the range of velocities (per axis) that
//! keep every kick point since the anchor within `deviation / sqrt(3)` on that axis. A kick that
//! empties the range closes the segment at the last point that fitted (a row of the log) and
//! opens the next one there. The simplified path is continuous, and within `deviation` of the
//! path taken at every time (both are linear between the points, and within it at each point),
//! so the check, run on it with every distance widened by the two sides' deviations, stays
//! conservative. At each rollback mark every open segment is closed exactly at the vertex's
//! position then, so a rollback only truncates the log.
//!
//! Rows are logged in event order as a structure of arrays (`vertex`, `time`, `x`, `v`: a
//! segment's start, the position there and the velocity along it), which is cheap to append to.
//! When the window ends, [`History::seal`] fits every vertex's moving volume in one pass over the
//! log (each path's chord is known from its ends, so the excursions from it can be gathered in
//! any order), and [`History::select`] sorts the rows of only the vertices the broad phase kept (a
//! stable counting sort, so each vertex's rows stay in time order) into the segment arrays the
//! narrow phase reads, one contiguous run of segments a vertex.
//!
//! Both read only the rows from the latest mark up to which a check found the window clean
//! ([`History::checked_to`]): a rollback never goes back before it, so the paths before it stay
//! as checked, and each check costs the span it has not yet seen, not the whole window.

use glam::DVec3;
use rayon::prelude::*;

use crate::kds::kdop::{Dop18, PathFit};
use crate::profiling::zone;
use crate::state::VertexState;

/// Vertices per rayon task when every vertex is fitted or scanned.
const PAR_MIN_LEN: usize = 4096;

/// Vertices per rayon task, at least, when a whole-mesh kick is recorded: a kick comes every
/// few microseconds on a small mesh, and the recording would otherwise be serial there.
const PAR_MIN_KICKED: usize = 512;

/// Rows per rayon task, at least, when the log is read per vertex range.
const PAR_MIN_ROWS: usize = 1 << 16;

/// Slab axes of a [`Dop18`].
const AXES: usize = 9;

/// One window's trajectories (see the module docs).
#[derive(Debug, Default)]
pub(super) struct History {
    /// The span a check reads, `[from, end]`: from the window's start, or from the latest time
    /// up to which a check found the window clean ([`History::checked_to`]), to where the run
    /// was last sealed.
    from: f64,
    end: f64,
    /// The log's length at `from`: rows before it end by then and are not read.
    from_len: usize,
    /// How far a simplified path may be from the path taken (a distance).
    deviation: f64,
    /// Per vertex: the segment being recorded.
    open: Vec<OpenSegment>,
    /// Per vertex: position at `from`.
    x_from: Vec<DVec3>,
    /// The log of closed segments, in event order.
    log: Rows,
    /// Vertex kicks recorded since [`take_kicks`](Self::take_kicks) last read them.
    kicks: u64,
    /// The log's length before [`seal`](Self::seal) added each vertex's last row.
    unsealed: usize,
    /// After [`fit_volumes`](Self::fit_volumes): each vertex's path fit.
    fits: Vec<PathFit<AXES>>,
    /// After [`select`](Self::select): vertex `i`'s segments are `offset[i]..offset[i + 1]`
    /// (none if not selected), each a start time, the position then and the velocity from
    /// then on.
    offset: Vec<u32>,
    seg_time: Vec<f64>,
    seg_x: Vec<DVec3>,
    seg_v: Vec<DVec3>,
    /// After [`select`](Self::select): each selected vertex's largest speed in the span.
    fastest: Vec<f64>,
    /// Scratch: the rows of a whole-mesh kick, one buffer a task.
    scratch: Vec<Rows>,
}

/// Segment rows as a structure of arrays: each a vertex, the segment's start time, the
/// position there and the velocity along it.
#[derive(Debug, Default)]
struct Rows {
    vertex: Vec<u32>,
    time: Vec<f64>,
    x: Vec<DVec3>,
    v: Vec<DVec3>,
}

impl Rows {
    fn push(&mut self, vertex: u32, time: f64, x: DVec3, v: DVec3) {
        self.vertex.push(vertex);
        self.time.push(time);
        self.x.push(x);
        self.v.push(v);
    }

    fn len(&self) -> usize {
        self.vertex.len()
    }

    fn truncate(&mut self, len: usize) {
        self.vertex.truncate(len);
        self.time.truncate(len);
        self.x.truncate(len);
        self.v.truncate(len);
    }

    /// Moves every row of `other` to the end.
    fn append(&mut self, other: &mut Rows) {
        self.vertex.append(&mut other.vertex);
        self.time.append(&mut other.time);
        self.x.append(&mut other.x);
        self.v.append(&mut other.v);
    }
}

/// A vertex's segment being recorded (see the module docs).
#[derive(Clone, Copy, Debug)]
struct OpenSegment {
    /// The anchor: the segment's start time and position (on the simplified path).
    time: f64,
    x: DVec3,
    /// Per axis, the velocities that keep every point since the anchor within the tolerance;
    /// unbounded while there is none.
    lo: DVec3,
    hi: DVec3,
    /// The time of the last point that fitted (the anchor's while there is none).
    last: f64,
    /// The velocity last recorded (a kick that leaves it unchanged makes no point).
    v: DVec3,
}

impl OpenSegment {
    /// A segment from the exact position `x` at `time`, moving at `v`.
    fn at(time: f64, x: DVec3, v: DVec3) -> Self {
        Self {
            time,
            x,
            lo: DVec3::NEG_INFINITY,
            hi: DVec3::INFINITY,
            last: time,
            v,
        }
    }

    /// The velocity of a segment closed now: one within the range (the middle).
    fn velocity(&self) -> DVec3 {
        0.5 * (self.lo + self.hi)
    }

    /// Adds the path's point `x` at `time` (no earlier than the last), within `tol` on each
    /// axis; emits the segment it closes, if any, as `(start, position, velocity)`.
    #[inline]
    fn add(&mut self, time: f64, x: DVec3, tol: f64) -> Option<(f64, DVec3, DVec3)> {
        if time <= self.time {
            return None;
        }
        let (d, inv) = (x - self.x, 1.0 / (time - self.time));
        let lo = self.lo.max((d - tol) * inv);
        let hi = self.hi.min((d + tol) * inv);
        if lo.cmple(hi).all() {
            (self.lo, self.hi, self.last) = (lo, hi, time);
            return None;
        }
        // The range was bounded, so a point fitted after the anchor: close there.
        let v = self.velocity();
        let closed = (self.time, self.x, v);
        self.x += v * (self.last - self.time);
        self.time = self.last;
        let (d, inv) = (x - self.x, 1.0 / (time - self.time));
        (self.lo, self.hi, self.last) = ((d - tol) * inv, (d + tol) * inv, time);
        Some(closed)
    }

    /// Closes the segment at the path's exact position `x` at `time` (after every point),
    /// pushing the rows of vertex `i` to `rows`, and opens the next one there.
    fn close(&mut self, i: u32, time: f64, x: DVec3, rows: &mut Rows) {
        if self.last > self.time {
            let v = self.velocity();
            rows.push(i, self.time, self.x, v);
            self.x += v * (self.last - self.time);
            self.time = self.last;
        }
        // The path is straight from the last point on, so this piece stays within the
        // tolerance too.
        if time > self.time {
            rows.push(i, self.time, self.x, (x - self.x) / (time - self.time));
        }
        *self = Self::at(time, x, self.v);
    }
}

/// One vertex's segments in a sealed history: parallel slices, in time order.
#[derive(Clone, Copy, Debug)]
pub(super) struct Path<'a> {
    /// Start time of each segment (the first is the span's start).
    pub(super) time: &'a [f64],
    /// Position at each segment's start.
    pub(super) x: &'a [DVec3],
    /// Velocity along each segment.
    pub(super) v: &'a [DVec3],
    /// The largest speed along the path.
    pub(super) fastest: f64,
    /// How far the path taken may be from this one at any time.
    pub(super) deviation: f64,
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
    /// A history whose paths are kept within `deviation` (a distance, positive) of the paths
    /// taken.
    pub(super) fn new(deviation: f64) -> Self {
        debug_assert!(deviation > 0.0);
        Self {
            deviation,
            ..Self::default()
        }
    }

    /// The tolerance on each axis.
    fn tolerance(&self) -> f64 {
        self.deviation / 3f64.sqrt()
    }

    /// Starts recording a window beginning at `start` from `state`.
    pub(super) fn begin(&mut self, state: &VertexState, start: f64) {
        self.end = start;
        self.log.truncate(0);
        self.open_all(state, start);
        self.checked_to(start);
    }

    /// Marks the window up to `time` as found clean by a check: later checks read the paths
    /// from there on. The run stands at `time`, a mark (every segment is open from there and
    /// the log holds nothing later), and no rollback goes back before it.
    pub(super) fn checked_to(&mut self, time: f64) {
        debug_assert!(self.open.iter().all(|o| o.time == time));
        self.from = time;
        self.from_len = self.log.len();
        self.x_from.clear();
        self.x_from.extend(self.open.iter().map(|o| o.x));
    }

    /// Opens every vertex's segment at its exact position at `time`.
    fn open_all(&mut self, state: &VertexState, time: f64) {
        self.open.clear();
        self.open.extend(
            (0..state.len()).map(|i| OpenSegment::at(time, state.position_at(i, time), state.v[i])),
        );
    }

    /// Records the velocity changes of `vertices` (a kick's stencil) made by the event just
    /// processed.
    pub(super) fn record(&mut self, state: &VertexState, vertices: &[u32]) {
        self.kicks += vertices.len() as u64;
        let tol = self.tolerance();
        for &i in vertices {
            let k = i as usize;
            let open = &mut self.open[k];
            if state.v[k] != open.v {
                open.v = state.v[k];
                if let Some((t, x, v)) = open.add(state.t[k], state.x[k], tol) {
                    self.log.push(i, t, x, v);
                }
            }
        }
    }

    /// Records the velocity changes of every vertex (a whole-mesh kick), on the thread pool;
    /// each task's rows are logged in vertex order.
    pub(super) fn record_all(&mut self, state: &VertexState) {
        self.kicks += state.len() as u64;
        let tol = self.tolerance();
        let chunk = state
            .len()
            .div_ceil(rayon::current_num_threads())
            .max(PAR_MIN_KICKED);
        let tasks = state.len().div_ceil(chunk);
        self.scratch.resize_with(tasks, Rows::default);
        (self.open.par_chunks_mut(chunk))
            .zip(self.scratch.par_iter_mut())
            .enumerate()
            .for_each_init(
                || zone!("history_task"),
                |_, (c, (open, rows))| {
                    for (k, open) in (c * chunk..).zip(open) {
                        if state.v[k] != open.v {
                            open.v = state.v[k];
                            if let Some((t, x, v)) = open.add(state.t[k], state.x[k], tol) {
                                rows.push(k as u32, t, x, v);
                            }
                        }
                    }
                },
            );
        for rows in &mut self.scratch {
            self.log.append(rows);
        }
    }

    /// Closes every vertex's segment at its exact position at `time` (no earlier than any
    /// point recorded), so that the log up to here is all a rewind to `time` needs. Returns
    /// the log's length then.
    pub(super) fn mark(&mut self, state: &VertexState, time: f64) -> usize {
        for (i, open) in self.open.iter_mut().enumerate() {
            open.close(i as u32, time, state.position_at(i, time), &mut self.log);
        }
        self.log.len()
    }

    /// Forgets every row logged after the first `len` (a [`mark`](Self::mark)'s), going back
    /// to where `state` (saved at the mark's `time`) stood.
    pub(super) fn rewind(&mut self, len: usize, state: &VertexState, time: f64) {
        self.log.truncate(len);
        self.open_all(state, time);
    }

    /// Ends every recorded path at `end` (the window's, or a probe's part of the way), each
    /// with a last row from there on. The first vertex whose velocity changed without being
    /// recorded is an error: its recorded path would not be the one it took.
    pub(super) fn seal(&mut self, state: &VertexState, end: f64) -> Result<(), u32> {
        self.end = end;
        if let Some(i) = (0..state.len()).find(|&i| state.v[i] != self.open[i].v) {
            return Err(i as u32);
        }
        self.unsealed = self.mark(state, end);
        // A last row for each vertex, from the end on, so that every path has one.
        for (i, open) in self.open.iter().enumerate() {
            self.log.push(i as u32, end, open.x, open.v);
        }
        Ok(())
    }

    /// Fits every vertex's volume to its path over the span checked (after
    /// [`seal`](Self::seal)), in one pass over its rows of the log.
    pub(super) fn fit_volumes(&mut self, state: &VertexState) {
        let end = self.end;
        let (span, x_from) = ((self.from, end), &self.x_from);
        self.fits.clear();
        self.fits.par_extend(
            (0..state.len())
                .into_par_iter()
                .with_min_len(PAR_MIN_LEN)
                .map_init(
                    || zone!("history_task"),
                    |_, i| PathFit::new(span, x_from[i], state.position_at(i, end)),
                ),
        );
        let f = self.from_len;
        let (log_vertex, log_time, log_x) =
            (&self.log.vertex[f..], &self.log.time[f..], &self.log.x[f..]);
        let chunk = self.fits.len().div_ceil(self.tasks()).max(1);
        (self.fits.par_chunks_mut(chunk).enumerate()).for_each_init(
            || zone!("history_task"),
            |_, (c, fits)| {
                let first = c * chunk;
                for (r, &i) in log_vertex.iter().enumerate() {
                    if let Some(fit) = (i as usize)
                        .checked_sub(first)
                        .and_then(|k| fits.get_mut(k))
                    {
                        fit.add(log_time[r], log_x[r]);
                    }
                }
            },
        );
    }

    /// The vertex kicks recorded since the last call: the work the run did.
    pub(super) fn take_kicks(&mut self) -> u64 {
        std::mem::take(&mut self.kicks)
    }

    /// Goes on recording after a [`seal`](Self::seal) that ended a look at the window so far:
    /// drops the rows it added past the paths (each segment is open from the seal's time).
    pub(super) fn unseal(&mut self) {
        self.log.truncate(self.unsealed);
    }

    /// How many tasks a pass over the span's rows per vertex range is cut into: one a thread,
    /// each with a share of the rows worth its scan.
    fn tasks(&self) -> usize {
        let rows = self.log.len() - self.from_len;
        rayon::current_num_threads().clamp(1, 1 + rows / PAR_MIN_ROWS)
    }

    /// A volume over the span checked holding vertex `i`'s path taken, grown by `pad` (after
    /// [`fit_volumes`](Self::fit_volumes)).
    pub(super) fn volume(&self, i: u32, pad: f64) -> Dop18 {
        self.fits[i as usize].volume(pad + self.deviation)
    }

    /// Vertex `i`'s position at the start of the span checked.
    pub(super) fn start_position(&self, i: u32) -> DVec3 {
        self.x_from[i as usize]
    }

    /// Sorts the paths of `vertices` (ascending, each once) over the span checked out of the
    /// log, for [`path`](Self::path) (after [`seal`](Self::seal)).
    pub(super) fn select(&mut self, vertices: &[u32]) {
        let n = self.x_from.len();
        let f = self.from_len;
        self.offset.clear();
        self.offset.resize(n + 1, 0);
        for &i in vertices {
            self.offset[i as usize + 1] = 1;
        }
        for &i in &self.log.vertex[f..] {
            if self.offset[i as usize + 1] > 0 {
                self.offset[i as usize + 1] += 1;
            }
        }
        for &i in vertices {
            self.offset[i as usize + 1] -= 1;
        }
        for i in 0..n {
            self.offset[i + 1] += self.offset[i];
        }
        let offset = &self.offset;
        let total = offset[n] as usize;
        self.seg_time.resize(total, 0.0);
        self.seg_x.resize(total, DVec3::ZERO);
        self.seg_v.resize(total, DVec3::ZERO);
        // One task a thread, each over a run of the selected vertices holding about as many
        // rows as the others: it scans the whole log and places its own vertices' rows, each
        // vertex's in log (so time) order. The result does not depend on how they are cut.
        let tasks = self.tasks();
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
        let log = &self.log;
        parts.into_par_iter().for_each_init(
            || zone!("history_task"),
            |_, (vertices, time, x, v)| {
                let base = offset[vertices.start];
                // `next[i - start]`: where vertex i's next row goes.
                let mut next: Vec<u32> =
                    offset[vertices.clone()].iter().map(|o| o - base).collect();
                for (r, &i) in log.vertex.iter().enumerate().skip(f) {
                    let i = i as usize;
                    if vertices.contains(&i) && offset[i + 1] > offset[i] {
                        let slot = &mut next[i - vertices.start];
                        let k = *slot as usize;
                        (time[k], x[k], v[k]) = (log.time[r], log.x[r], log.v[r]);
                        *slot += 1;
                    }
                }
            },
        );
        let seg_v = &self.seg_v;
        self.fastest.clear();
        self.fastest
            .par_extend((0..n).into_par_iter().with_min_len(PAR_MIN_LEN).map_init(
                || zone!("history_task"),
                |_, i| {
                    let segments = &seg_v[offset[i] as usize..offset[i + 1] as usize];
                    segments.iter().map(|v| v.length()).fold(0.0, f64::max)
                },
            ));
    }

    /// The span checked, `[from, end]`: the paths [`path`](Self::path) gives begin at `from`.
    pub(super) fn span(&self) -> (f64, f64) {
        (self.from, self.end)
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
            deviation: self.deviation,
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

    /// Whether `a` and `b` are within `tol` of each other on every axis.
    fn near(a: DVec3, b: DVec3, tol: f64) -> bool {
        (a - b).abs().max_element() <= tol
    }

    #[test]
    fn paths_follow_the_kicks_in_time_order() {
        let mut state = two_vertices();
        let mut h = History::new(1e-9);
        h.begin(&state, 0.0);
        state.apply_impulse(0, 1.0, DVec3::Y);
        h.record(&state, &[0, 1]);
        state.apply_impulse(1, 1.5, DVec3::Z);
        state.apply_impulse(0, 2.0, -DVec3::X);
        h.record_all(&state);
        h.seal(&state, 3.0).unwrap();
        h.select(&[0, 1]);
        let p = h.path(0);
        // Every kick off the line breaks the path; the last row runs on from the end.
        assert_eq!(p.time, &[0.0, 1.0, 2.0, 3.0]);
        let at = |p: &Path<'_>, s: f64| p.at(p.segment_at(s), s);
        assert!(near(at(&p, 1.5), DVec3::new(1.5, 0.5, 0.0), 1e-9));
        assert!(near(at(&p, 3.0), DVec3::new(2.0, 2.0, 0.0), 1e-9));
        assert_eq!(h.path(1).time, &[0.0, 1.5, 3.0]);
        h.select(&[1]);
        let p = h.path(1);
        assert_eq!(p.time, &[0.0, 1.5, 3.0]);
        assert!(near(at(&p, 1.0), DVec3::X, 1e-9));
        assert!(near(at(&p, 3.0), DVec3::new(1.0, 0.0, 1.5), 1e-9));
    }

    /// A vertex falling from rest under gravity (1000 cm/s^2), kicked every millisecond for a
    /// second: its true path at the kicks, as `(time, position)`.
    fn fall(
        h: &mut History,
        state: &mut VertexState,
        kicks: std::ops::Range<u32>,
    ) -> Vec<(f64, DVec3)> {
        kicks
            .map(|k| {
                let t = f64::from(k + 1) * 1e-3;
                state.apply_impulse(0, t, DVec3::new(0.0, -1.0, 0.0));
                h.record(state, &[0]);
                (t, state.x[0])
            })
            .collect()
    }

    #[test]
    fn a_smooth_path_is_kept_in_few_rows_within_the_deviation_and_rewinds_to_a_mark() {
        let mut state = two_vertices();
        state.v[0] = DVec3::ZERO;
        let deviation = 1e-3;
        let mut h = History::new(deviation);
        h.begin(&state, 0.0);
        let mut truth = vec![(0.0, state.x[0])];
        truth.extend(fall(&mut h, &mut state, 0..400));
        let saved = state.clone();
        let mark = h.mark(&state, 0.4005);
        truth.extend(fall(&mut h, &mut state, 400..999));
        let first_run = (h.log.time.clone(), h.log.x.clone());
        // Back to the mark and the same kicks again: the same rows.
        state = saved;
        h.rewind(mark, &state, 0.4005);
        fall(&mut h, &mut state, 400..999);
        assert_eq!((&h.log.time, &h.log.x), (&first_run.0, &first_run.1));
        h.seal(&state, 1.0).unwrap();
        truth.push((1.0, state.position_at(0, 1.0)));
        h.select(&[0]);
        let p = h.path(0);
        // A row per two kicks at most (the segments span about 2 ms here).
        assert!(p.time.len() < 500, "{} rows for 1000 kicks", p.time.len());
        // Between two kicks the true path is a line: sample it, on and between them.
        for w in truth.windows(2) {
            let ((a, xa), (b, xb)) = (w[0], w[1]);
            for j in 0..=4 {
                let s = a + (b - a) * f64::from(j) / 4.0;
                let taken = xa + (xb - xa) * ((s - a) / (b - a));
                let recorded = p.at(p.segment_at(s), s);
                assert!(
                    (taken - recorded).length() <= deviation * (1.0 + 1e-9),
                    "{s}: {taken} recorded at {recorded}"
                );
            }
        }
    }

    #[test]
    fn a_look_at_the_window_so_far_leaves_the_rows_as_one_seal_at_the_end() {
        let run = |probe: Option<f64>| {
            let mut state = two_vertices();
            state.v[0] = DVec3::ZERO;
            let mut h = History::new(1e-3);
            h.begin(&state, 0.0);
            fall(&mut h, &mut state, 0..400);
            if let Some(t) = probe {
                h.mark(&state, t);
                h.seal(&state, t).unwrap();
                h.select(&[0]);
                // The paths so far end at the probe.
                assert_eq!(h.path(0).time.last(), Some(&t));
                h.unseal();
            } else {
                h.mark(&state, 0.4005);
            }
            fall(&mut h, &mut state, 400..999);
            assert_eq!(h.take_kicks(), 999);
            h.seal(&state, 1.0).unwrap();
            (h.log.time.clone(), h.log.x.clone(), h.log.v.clone())
        };
        assert_eq!(run(Some(0.4005)), run(None));
    }

    #[test]
    fn a_vertex_volume_holds_its_path() {
        let mut state = two_vertices();
        let mut h = History::new(1e-9);
        h.begin(&state, 0.0);
        state.apply_impulse(0, 1.0, DVec3::new(-2.0, 3.0, 0.0));
        h.record(&state, &[0]);
        state.apply_impulse(0, 2.0, DVec3::new(0.0, -6.0, 1.0));
        h.record(&state, &[0]);
        h.seal(&state, 3.0).unwrap();
        h.fit_volumes(&state);
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
    fn a_check_reads_the_paths_from_where_the_window_was_last_found_clean() {
        let run = |checked: bool| {
            let mut state = two_vertices();
            state.v[0] = 10.0 * DVec3::X;
            let mut h = History::new(1e-9);
            h.begin(&state, 0.0);
            state.apply_impulse(0, 1.0, -10.0 * DVec3::X);
            h.record(&state, &[0]);
            h.mark(&state, 1.5);
            if checked {
                h.checked_to(1.5);
            }
            state.apply_impulse(0, 2.0, DVec3::Y);
            h.record(&state, &[0]);
            h.seal(&state, 3.0).unwrap();
            h.fit_volumes(&state);
            h.select(&[0, 1]);
            h
        };
        use crate::kds::kdop::Volume;
        let rest = |at: DVec3| Dop18::fit(&[at], &[at], 0.0, 3.0, 0.0);
        let h = run(true);
        assert_eq!(h.span(), (1.5, 3.0));
        let p = h.path(0);
        assert_eq!(p.time, &[1.5, 2.0, 3.0]);
        assert!(near(p.at(0, 1.5), 10.0 * DVec3::X, 1e-12));
        assert_eq!(h.path(1).time, &[1.5, 3.0]);
        // The volume holds the path from the mark on, not where the vertex was before it.
        let (t, t_end) = h.span();
        let vol = h.volume(0, 0.0);
        let later = rest(DVec3::new(10.0, 0.5, 0.0));
        assert!(vol.overlap_interval(&later, t, t_end).is_some());
        assert!(vol.overlap_interval(&rest(DVec3::ZERO), t, t_end).is_none());
        // Read from the window's start, it does.
        let h = run(false);
        let (t, t_end) = h.span();
        assert_eq!(h.path(0).time, &[0.0, 1.0, 1.5, 2.0, 3.0]);
        assert_eq!(t, 0.0);
        assert!(h
            .volume(0, 0.0)
            .overlap_interval(&rest(DVec3::ZERO), t, t_end)
            .is_some());
    }

    #[test]
    fn a_kick_left_unrecorded_is_reported() {
        let mut state = two_vertices();
        let mut h = History::new(1e-9);
        h.begin(&state, 0.0);
        state.apply_impulse(1, 0.5, DVec3::Y);
        h.record(&state, &[0]);
        assert_eq!(h.seal(&state, 1.0), Err(1));
    }
}
