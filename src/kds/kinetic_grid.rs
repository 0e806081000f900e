//! The kinetic Eulerian grid of thesis §7.3: an alternative broad phase with one certificate per
//! leaf, "the leaf's box covers exactly these cells".
//!
//! Space is cut into cubic cells of a fixed size (the mean leaf box at the first rebuild, at
//! least twice `eta1`). Each leaf has an axis-aligned box moving linearly in time (grown by half
//! of `eta1` plus the reference slack, see [`super::leaves`]) and is registered in every cell its
//! box covers. Its certificate fails at the earliest time a face of the box crosses a cell
//! boundary; the leaf then updates its cells. Two leaves sharing a cell hand their feature pairs
//! to separation slabs (counted, so a pair sharing several cells is reported once) and take
//! them back when they share none: the eager hand-back of the thesis's two variants.
//!
//! Boxes that do not share a cell do not overlap, so their leaves stay at least `eta1` apart.

use glam::DVec3;
use hashbrown::HashMap;

use super::bvh::Bvh;
use super::kdop::{after, Aabb, Volume, FIXED_AXES};
use super::leaves::{LeafId, Leaves, References};
use crate::events::EventId;
use crate::events::EventQueue;
use crate::penalty::PairKey;
use crate::state::{VertexId, VertexState};

/// An inclusive box of cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cells {
    lo: [i32; 3],
    hi: [i32; 3],
}

impl Cells {
    const EMPTY: Self = Self {
        lo: [0; 3],
        hi: [-1; 3],
    };

    fn contains(&self, c: [i32; 3]) -> bool {
        (0..3).all(|k| self.lo[k] <= c[k] && c[k] <= self.hi[k])
    }

    fn iter(self) -> impl Iterator<Item = [i32; 3]> {
        let (l, h) = (self.lo, self.hi);
        (l[0]..=h[0]).flat_map(move |x| {
            (l[1]..=h[1]).flat_map(move |y| (l[2]..=h[2]).map(move |z| [x, y, z]))
        })
    }
}

/// Counters of the kinetic grid.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct GridStats {
    /// Cell-crossing certificates processed.
    pub certificates: u64,
    /// Leaf pairs sharing a cell now.
    pub sharing_pairs: usize,
    /// Most leaf pairs sharing a cell at once.
    pub peak_sharing_pairs: usize,
    /// Leaf volumes refitted after vertices strayed from their references.
    pub leaf_refits: u64,
    /// Cell size (cm).
    pub cell: f64,
}

/// The certificate of leaf `l` (the list's queue is keyed by leaf).
fn event(l: LeafId) -> EventId {
    EventId::new(l.get())
}

/// The kinetic grid (see the module docs).
#[derive(Debug)]
pub(crate) struct KineticGrid {
    leaves: Leaves,
    refs: References,
    /// Leaf boxes (by [`LeafId`]), valid from their last fit to the horizon's end.
    boxes: Vec<Aabb>,
    /// Cells each leaf is registered in.
    registered: Vec<Cells>,
    margin: f64,
    slack: f64,
    cell: f64,
    now: f64,
    t_end: f64,
    grid: HashMap<[i32; 3], Vec<LeafId>>,
    /// Leaf pair `(a, b)`, `a < b` -> number of cells they share.
    shared: HashMap<(LeafId, LeafId), u32>,
    queue: EventQueue,
    lost: Vec<PairKey>,
    scratch: Vec<LeafId>,
    stats: GridStats,
}

impl KineticGrid {
    /// A kinetic grid over these leaves (see [`super::separation_list::SeparationList::new`]
    /// for `eta1` and `slack`).
    pub(crate) fn new(leaves: Leaves, state: &VertexState, eta1: f64, slack: f64) -> Self {
        let n = leaves.len();
        Self {
            refs: References::new(state.len()),
            boxes: vec![Aabb::fit(&[DVec3::ZERO], &[DVec3::ZERO], 0.0, 0.0, 0.0); n],
            registered: vec![Cells::EMPTY; n],
            leaves,
            margin: 0.5 * eta1,
            slack,
            cell: 0.0,
            now: 0.0,
            t_end: 0.0,
            grid: HashMap::new(),
            shared: HashMap::new(),
            queue: EventQueue::new(),
            lost: Vec::new(),
            scratch: Vec::new(),
            stats: GridStats::default(),
        }
    }

    /// The leaves and their topology.
    pub(crate) fn leaves(&self) -> &Leaves {
        &self.leaves
    }

    /// Counters.
    pub(crate) fn stats(&self) -> &GridStats {
        &self.stats
    }

    /// Leaf boxes refitted so far after vertices strayed.
    pub(crate) fn leaf_refits(&self) -> u64 {
        self.stats.leaf_refits
    }

    /// Certificates queued now.
    pub(crate) fn certificates(&self) -> usize {
        self.queue.len()
    }

    /// Heap bytes held, roughly (hash tables counted at their entry size).
    pub(crate) fn bytes(&self) -> usize {
        let cells: usize = self.grid.values().map(|v| v.capacity() * 4 + 40).sum();
        self.refs.bytes()
            + self.boxes.capacity() * std::mem::size_of::<Aabb>()
            + self.registered.capacity() * std::mem::size_of::<Cells>()
            + cells
            + self.shared.capacity() * 16
            + self.queue.len() * 20
    }

    /// The time of the next certificate failure (`now` while taken-back pairs wait).
    pub(crate) fn next_failure_time(&self) -> f64 {
        if !self.lost.is_empty() {
            return self.now;
        }
        self.queue.peek().map_or(f64::INFINITY, |(_, t)| t)
    }

    fn pad(&self) -> f64 {
        self.margin + self.slack
    }

    /// Starts a new horizon `[t, t_end]` with reference slack `slack` (cm): refits every leaf
    /// box and updates every leaf's cells.
    pub(crate) fn rebuild(
        &mut self,
        state: &VertexState,
        t: f64,
        t_end: f64,
        slack: f64,
        found: &mut impl FnMut(PairKey),
    ) {
        self.now = self.now.max(t);
        self.t_end = t_end;
        self.slack = slack;
        self.refs.reset_all(state, t_end);
        let pad = self.pad();
        for l in self.leaves.ids() {
            self.boxes[l.index()] =
                Bvh::<Aabb>::fit_leaves(&self.leaves, &self.refs, &[l], t, t_end, pad);
        }
        if self.cell == 0.0 {
            let n = self.leaves.len().max(1) as f64;
            let mean = (0..self.leaves.len())
                .map(|l| {
                    (0..3)
                        .map(|j| {
                            let (lo, hi) = self.boxes[l].slab(j, t, t_end);
                            hi - lo
                        })
                        .fold(0.0, f64::max)
                })
                .sum::<f64>()
                / n;
            self.cell = mean.max(4.0 * self.margin).max(1e-6);
            self.stats.cell = self.cell;
        }
        for l in self.leaves.ids() {
            self.reregister(l, t, found);
        }
        // Every sharing pair once, in leaf order.
        let mut pairs = Vec::new();
        for l in self.leaves.ids() {
            for c in self.registered[l.index()].iter() {
                for &o in self.grid.get(&c).map_or(&[][..], |v| &v[..]) {
                    if o > l {
                        pairs.push((l, o));
                    }
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        for (l, o) in pairs {
            self.hand_over(l, o, found);
        }
    }

    /// After the velocities of `vertices` changed at `t`: refits the leaves of the vertices that
    /// left their reference paths and updates their cells.
    pub(crate) fn update(
        &mut self,
        state: &VertexState,
        t: f64,
        vertices: &[u32],
        found: &mut impl FnMut(PairKey),
    ) {
        self.now = self.now.max(t);
        let mut dirty = std::mem::take(&mut self.scratch);
        dirty.clear();
        for v in vertices.iter().copied().map(VertexId::new) {
            if !self.refs.follows(v, state, t, self.t_end, self.slack) {
                self.refs.reset(v, state, self.t_end);
                dirty.extend_from_slice(self.leaves.of_vertex(v));
            }
        }
        dirty.sort_unstable();
        dirty.dedup();
        self.stats.leaf_refits += dirty.len() as u64;
        let pad = self.pad();
        for &l in &dirty {
            self.boxes[l.index()] =
                Bvh::<Aabb>::fit_leaves(&self.leaves, &self.refs, &[l], t, self.t_end, pad);
            self.reregister(l, t, found);
            self.hand_over_again(l, found);
        }
        self.scratch = dirty;
    }

    /// Processes every certificate due at or before `t`.
    pub(crate) fn advance(
        &mut self,
        t: f64,
        found: &mut impl FnMut(PairKey),
        lost: &mut impl FnMut(PairKey),
    ) {
        self.now = self.now.max(t);
        while let Some((id, s)) = self.queue.peek() {
            if s > t {
                break;
            }
            self.queue.pop();
            self.stats.certificates += 1;
            self.reregister(LeafId::new(id.0), t, found);
        }
        for k in self.lost.drain(..) {
            lost(k);
        }
    }

    /// Calls `found` for the near feature pairs ([`References::near`]) of leaf `l` and every leaf
    /// sharing a cell with it.
    fn hand_over_again(&self, l: LeafId, found: &mut impl FnMut(PairKey)) {
        let mut others = Vec::new();
        for c in self.registered[l.index()].iter() {
            others.extend(self.grid.get(&c).map_or(&[][..], |v| &v[..]));
        }
        others.sort_unstable();
        others.dedup();
        for o in others {
            if o != l {
                self.hand_over(l, o, found);
            }
        }
    }

    /// Calls `found` for the near feature pairs of leaves `l` and `o`.
    fn hand_over(&self, l: LeafId, o: LeafId, found: &mut impl FnMut(PairKey)) {
        self.leaves.features(l, o, &mut |k| {
            if self.near(k) {
                found(k);
            }
        });
    }

    /// [`References::near`] over the current horizon.
    fn near(&self, key: PairKey) -> bool {
        let hints = [&FIXED_AXES; 2];
        let span = (self.now, self.t_end);
        (self.refs).near::<Aabb>(&self.leaves, key, self.pad(), span, hints)
    }

    /// Whether some pair of leaves sharing a cell holds `key` among its feature pairs and the
    /// pair's primitives may come within `eta1` before the horizon's end.
    pub(crate) fn overlaps(&self, key: PairKey) -> bool {
        if !self.near(key) {
            return false;
        }
        let (mut a_side, b_side) = self.leaves.sides(key);
        a_side.any(|a| {
            b_side.clone().any(|b| {
                a != b
                    && self
                        .shared
                        .get(&(a.min(b), a.max(b)))
                        .is_some_and(|&n| n > 0)
                    && self.leaves.covers(a, b, key)
            })
        })
    }

    /// The audit, at `t` (it holds between a kick and the update that follows it): every vertex
    /// is near its reference and inside its leaves' boxes, and every leaf is registered in
    /// every cell its box covers.
    pub(crate) fn audit(&self, state: &VertexState, t: f64) -> Result<(), String> {
        let t_end = self.t_end;
        for v in (0..state.len()).map(VertexId::from_usize) {
            let p = state.position_at(v.index(), t);
            if (p - self.refs.at(v, t, t_end)).length() > self.slack * (1.0 + 1e-9) + 1e-12 {
                return Err(format!(
                    "vertex {v} strayed from its grid reference at t = {t}"
                ));
            }
            for &l in self.leaves.of_vertex(v) {
                if !self.boxes[l.index()].holds_point(p, self.margin * (1.0 - 1e-9), t, t_end) {
                    return Err(format!("vertex {v} is not inside leaf box {l} at t = {t}"));
                }
            }
        }
        if t >= t_end {
            // The horizon is over: certificates stop short of its end (the short-circuit) and
            // the rebuild due now registers every leaf again.
            return Ok(());
        }
        for l in self.leaves.ids() {
            if self.queue.time_of(event(l)).is_some_and(|s| s <= t) {
                // Its certificate is due now: it may touch the cell it is about to enter.
                continue;
            }
            let now = self.cells_at(l, t);
            let reg = self.registered[l.index()];
            if now.iter().any(|c| !reg.contains(c)) {
                return Err(format!(
                    "leaf {l} covers a cell it is not registered in at t = {t}"
                ));
            }
        }
        Ok(())
    }

    /// The cells leaf `l`'s box touches at `s` (cells are closed: a face on a boundary touches
    /// the cells on both sides). A face moving up meets its next boundary `(floor + 1) h` and a
    /// face moving down `(ceil - 1) h`: exactly when a cell starts to be touched.
    fn cells_at(&self, l: LeafId, s: f64) -> Cells {
        let b = &self.boxes[l.index()];
        let mut out = Cells::EMPTY;
        for j in 0..3 {
            let (lo, hi) = b.slab(j, s, self.t_end);
            out.lo[j] = (lo / self.cell).ceil() as i32 - 1;
            out.hi[j] = (hi / self.cell).floor() as i32;
        }
        out
    }

    /// The earliest time after `t` at which a face of leaf `l`'s box crosses a cell boundary
    /// (its certificate), or `None` before the horizon's end.
    fn crossing(&self, l: LeafId, t: f64) -> Option<f64> {
        let b = &self.boxes[l.index()];
        let h = self.cell;
        let mut first = f64::INFINITY;
        for j in 0..3 {
            let (lo, hi) = b.slab(j, t, self.t_end);
            for (x, rate) in [(lo, b.vlo[j] as f64), (hi, b.vhi[j] as f64)] {
                let boundary = if rate > 0.0 {
                    ((x / h).floor() + 1.0) * h
                } else if rate < 0.0 {
                    ((x / h).ceil() - 1.0) * h
                } else {
                    continue;
                };
                let dt = (boundary - x) / rate;
                // Early rather than late: a certificate that fires early only re-checks.
                first = first.min(t + dt * (1.0 - 1e-9));
            }
        }
        (first < self.t_end).then(|| first.max(after(t)))
    }

    /// Moves leaf `l` to the cells its box covers at `t`, reporting pairs that start or stop
    /// sharing a cell, and re-times its certificate.
    fn reregister(&mut self, l: LeafId, t: f64, found: &mut impl FnMut(PairKey)) {
        let old = self.registered[l.index()];
        let new = self.cells_at(l, t);
        let mut pending = Vec::new();
        if new != old {
            for c in old.iter().filter(|c| !new.contains(*c)) {
                if let Some(list) = self.grid.get_mut(&c) {
                    if let Some(k) = list.iter().position(|&x| x == l) {
                        list.swap_remove(k);
                    }
                    for &o in list.iter() {
                        let key = (l.min(o), l.max(o));
                        if let Some(n) = self.shared.get_mut(&key) {
                            *n -= 1;
                            if *n == 0 {
                                self.shared.remove(&key);
                                let lost = &mut self.lost;
                                self.leaves.features(l, o, &mut |k| lost.push(k));
                            }
                        }
                    }
                }
            }
            for c in new.iter().filter(|c| !old.contains(*c)) {
                let list = self.grid.entry(c).or_default();
                for &o in list.iter() {
                    let n = self.shared.entry((l.min(o), l.max(o))).or_insert(0);
                    *n += 1;
                    if *n == 1 {
                        pending.push(o);
                    }
                }
                list.push(l);
            }
            self.registered[l.index()] = new;
            for o in pending {
                self.hand_over(l, o, found);
            }
            self.stats.sharing_pairs = self.shared.len();
            self.stats.peak_sharing_pairs = self.stats.peak_sharing_pairs.max(self.shared.len());
        }
        match self.crossing(l, t) {
            Some(s) => self.queue.update(event(l), s),
            None => {
                self.queue.remove(event(l));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn falling_particle_meets_the_floor_cells() {
        // A floor of two triangles and a particle 5 above it, falling at 10 cm/s.
        let edges = vec![[0, 1], [1, 2], [2, 0], [2, 3], [3, 0]];
        let triangles = vec![[0, 1, 2], [0, 2, 3]];
        let mut state = VertexState::default();
        for p in [
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 1.0),
            DVec3::new(0.0, 0.0, 1.0),
            DVec3::new(0.5, 5.0, 0.5),
        ] {
            state.x.push(p);
            state.t.push(0.0);
            state.v.push(DVec3::ZERO);
            state.mass.push(1.0);
            state.inv_mass.push(1.0);
            state.kind.push(crate::state::VertexKind::Free);
        }
        state.v[4] = DVec3::new(0.0, -10.0, 0.0);
        let leaves = Leaves::new(edges, triangles, 5);
        let mut grid = KineticGrid::new(leaves, &state, 0.1, 0.025);
        let mut found = Vec::new();
        grid.rebuild(&state, 0.0, 1.0, 0.025, &mut |k| found.push(k));
        assert!(found
            .iter()
            .all(|k| !matches!(k, PairKey::VertexTriangle(4, _))));
        let mut t = 0.0;
        while t < 0.49 {
            t = grid.next_failure_time().min(0.49);
            grid.advance(t, &mut |k| found.push(k), &mut |_| {});
            grid.audit(&state, t).unwrap();
        }
        // By t = 0.49 the particle is 0.1 above the floor: both triangles' pairs handed over.
        assert!(found.contains(&PairKey::VertexTriangle(4, 0)));
        assert!(found.contains(&PairKey::VertexTriangle(4, 1)));
        assert!(grid.overlaps(PairKey::VertexTriangle(4, 0)));
    }
}
