//! Vertex state as a structure of arrays, advanced lazily.
//!
//! Trajectories are piecewise linear: between two kicks a vertex moves with constant velocity.
//! A vertex therefore stores where it was at its own clock (`x[i]` at time `t[i]`) and its
//! velocity `v[i]`; its position at any later time `s` is `x[i] + (s - t[i]) * v[i]`
//! ([`VertexState::position_at`]). Reading a position never writes: only an event that changes a
//! vertex's velocity re-bases it (`VertexState::rebase`). This is what lets certificates and
//! snapshots run in any order, and on any thread, without changing a bit of the trajectory.
//!
//! The arrays are parallel (one entry per vertex) rather than an array of vertex structs, because
//! every hot loop reads only one or two of them: a snapshot reads `x, t, v`, a force tick reads
//! positions and writes `v`, the mass is read only when an impulse is applied.

use glam::DVec3;
use rayon::prelude::*;

use crate::profiling::zone;
use crate::typed_index::typed_index;

typed_index! {
    /// A vertex: an index into the columns of [`VertexState`].
    pub(crate) struct VertexId;
}

/// Vertices per rayon task in whole-mesh passes: below this, splitting costs more than it saves.
const PAR_MIN_LEN: usize = 4096;

/// How a vertex moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VertexKind {
    /// Moved by forces; `inv_mass > 0`.
    Free,
    /// Never moves; `inv_mass == 0`, velocity zero.
    Fixed,
    /// Moves with a prescribed piecewise-constant velocity; `inv_mass == 0`.
    Scripted,
}

/// Structure-of-arrays vertex buffers (see the module docs for the invariants).
#[derive(Clone, Debug, Default)]
pub struct VertexState {
    /// Position at the vertex's own clock `t`.
    pub x: Vec<DVec3>,
    /// The vertex's clock: the time at which `x` is exact.
    pub t: Vec<f64>,
    /// Velocity, constant since `t`.
    pub v: Vec<DVec3>,
    /// Lumped mass (g); kept for fixed and scripted vertices too, for energy accounting.
    pub mass: Vec<f64>,
    /// Inverse mass used by impulses: 0 for fixed and scripted vertices.
    pub inv_mass: Vec<f64>,
    /// How each vertex moves.
    pub kind: Vec<VertexKind>,
}

impl VertexState {
    /// Number of vertices.
    #[inline]
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// Whether there are no vertices.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Position of vertex `i` at time `s`, computed from its trajectory without writing anything.
    #[inline]
    pub fn position_at(&self, i: usize, s: f64) -> DVec3 {
        self.x[i] + (s - self.t[i]) * self.v[i]
    }

    /// Moves vertex `i`'s reference point to time `s` (called only before its velocity changes).
    #[inline]
    pub(crate) fn rebase(&mut self, i: usize, s: f64) {
        self.x[i] += (s - self.t[i]) * self.v[i];
        self.t[i] = s;
    }

    /// Applies an impulse to vertex `i` at time `s`: re-bases it and changes its velocity by
    /// `inv_mass * impulse`. Does nothing (writes nothing) when the velocity would not change.
    #[inline]
    pub(crate) fn apply_impulse(&mut self, i: usize, s: f64, impulse: DVec3) {
        let dv = self.inv_mass[i] * impulse;
        if dv != DVec3::ZERO {
            self.rebase(i, s);
            self.v[i] += dv;
        }
    }

    /// Kicks every free vertex at time `s` in parallel: vertex `i` with inverse mass `w` gains
    /// velocity `dv(i, w)`, re-based first; vertices with zero inverse mass or a zero change are
    /// not written. Returns the largest squared speed of the vertices it changed
    /// ([`faster`]: NaN if one is NaN).
    pub(crate) fn kick_all(&mut self, s: f64, dv: impl Fn(usize, f64) -> DVec3 + Sync) -> f64 {
        let inv_mass = &self.inv_mass;
        let task = || zone!("force_task");
        self.x
            .par_iter_mut()
            .zip(self.t.par_iter_mut())
            .zip(self.v.par_iter_mut())
            .enumerate()
            .with_min_len(PAR_MIN_LEN)
            .map_init(task, |_, (i, ((x, ti), v))| {
                if inv_mass[i] == 0.0 {
                    return 0.0;
                }
                let dv = dv(i, inv_mass[i]);
                if dv == DVec3::ZERO {
                    return 0.0;
                }
                *x += (s - *ti) * *v;
                *ti = s;
                *v += dv;
                v.length_squared()
            })
            .reduce(|| 0.0, faster)
    }

    /// The largest squared speed of `vertices` ([`faster`]: NaN if one is NaN); 0 for none.
    pub(crate) fn fastest(&self, vertices: impl IntoIterator<Item = u32>) -> f64 {
        (vertices.into_iter())
            .map(|i| self.v[i as usize].length_squared())
            .fold(0.0, faster)
    }

    /// The first of `vertices` whose speed is beyond `limit` or no number ([`beyond`]).
    pub(crate) fn first_beyond(
        &self,
        vertices: impl IntoIterator<Item = u32>,
        limit: f64,
    ) -> Option<u32> {
        (vertices.into_iter()).find(|&i| beyond(self.v[i as usize].length_squared(), limit))
    }

    /// Writes every vertex's position at time `s` into `out` (resized to fit).
    pub(crate) fn positions_at(&self, s: f64, out: &mut Vec<DVec3>) {
        out.clear();
        out.extend((0..self.len()).map(|i| self.position_at(i, s)));
    }

    /// The columns a kick writes, cut into consecutive vertex ranges at the ascending indices
    /// `at`: view `k` holds the vertices from `at[k - 1]` (0 for the first) to `at[k]` (the
    /// last vertex for the last), so threads can kick the vertices of different views at once.
    pub(crate) fn kick_views(&mut self, at: &[usize]) -> Vec<KickView<'_>> {
        let n = self.len();
        let (mut x, mut t, mut v) = (&mut self.x[..], &mut self.t[..], &mut self.v[..]);
        let mut inv_mass = &self.inv_mass[..];
        let mut views = Vec::with_capacity(at.len() + 1);
        let mut first = 0;
        for end in at.iter().copied().chain([n]) {
            let len = end - first;
            let (x_in, x_after) = std::mem::take(&mut x).split_at_mut(len);
            let (t_in, t_after) = std::mem::take(&mut t).split_at_mut(len);
            let (v_in, v_after) = std::mem::take(&mut v).split_at_mut(len);
            let (w_in, w_after) = inv_mass.split_at(len);
            views.push(KickView {
                first,
                x: x_in,
                t: t_in,
                v: v_in,
                inv_mass: w_in,
            });
            (x, t, v, inv_mass) = (x_after, t_after, v_after, w_after);
            first = end;
        }
        views
    }
}

/// The larger of two squared speeds, or NaN if either is NaN (a speed that is no number must
/// not pass a speed check as `f64::max` would let it). Order does not matter, so parallel
/// reductions give the same answer on any number of threads.
///
/// A squared speed is `+0.0` to `+inf`, or NaN of either sign: read as unsigned integers, their
/// bits order those numbers as `f64` does and put every NaN above `+inf`, so one integer
/// maximum, without branches, does it.
#[inline]
pub(crate) fn faster(a: f64, b: f64) -> f64 {
    debug_assert!(!(a < 0.0 || b < 0.0) && a.to_bits() != (-0.0f64).to_bits());
    f64::from_bits(a.to_bits().max(b.to_bits()))
}

/// The length of `v` for messages: no square overflows, so a speed of 1e200 reads as such,
/// not as infinity; NaN if a component is NaN.
pub(crate) fn speed(v: DVec3) -> f64 {
    let largest = v.abs().max_element();
    if largest > 0.0 && largest.is_finite() {
        largest * (v / largest).length()
    } else {
        v.length()
    }
}

/// Whether a squared speed is beyond the speed `limit`, or no number.
#[inline]
pub(crate) fn beyond(squared: f64, limit: f64) -> bool {
    squared.is_nan() || squared > limit * limit
}

/// The columns a kick writes for one range of consecutive vertices
/// ([`VertexState::kick_views`]).
#[derive(Debug)]
pub(crate) struct KickView<'a> {
    first: usize,
    x: &'a mut [DVec3],
    t: &'a mut [f64],
    v: &'a mut [DVec3],
    inv_mass: &'a [f64],
}

impl KickView<'_> {
    /// The velocity of vertex `i`, which must be in the view's range.
    #[inline]
    pub(crate) fn velocity(&self, i: usize) -> DVec3 {
        self.v[i - self.first]
    }

    /// [`VertexState::apply_impulse`] for vertex `i`, which must be in the view's range.
    /// Returns the vertex's new squared speed, or 0 if its velocity did not change.
    #[inline]
    pub(crate) fn apply_impulse(&mut self, i: usize, s: f64, impulse: DVec3) -> f64 {
        let k = i - self.first;
        let dv = self.inv_mass[k] * impulse;
        if dv == DVec3::ZERO {
            return 0.0;
        }
        self.x[k] += (s - self.t[k]) * self.v[k];
        self.t[k] = s;
        self.v[k] += dv;
        self.v[k].length_squared()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(n: usize) -> VertexState {
        let k = |i: usize| i as f64;
        VertexState {
            x: (0..n).map(|i| DVec3::new(k(i), 1.0, -k(i))).collect(),
            t: (0..n).map(|i| 0.1 * k(i)).collect(),
            v: (0..n).map(|i| DVec3::new(0.3, -k(i), 2.0)).collect(),
            mass: vec![2.0; n],
            inv_mass: (0..n).map(|i| if i == 3 { 0.0 } else { 0.5 }).collect(),
            kind: vec![VertexKind::Free; n],
        }
    }

    #[test]
    fn a_whole_mesh_kick_returns_the_largest_squared_speed_it_made() {
        let mut s = state(10);
        // Vertex 9 is the fastest before the kick; vertex 3 (fixed) is not kicked.
        let fastest = s.kick_all(2.0, |i, _| {
            if i == 9 {
                DVec3::ZERO
            } else {
                DVec3::new(0.0, i as f64, 0.0)
            }
        });
        let kicked = (0..9).filter(|&i| i != 3);
        assert_eq!(fastest, s.fastest(kicked));
        assert!(fastest < s.v[9].length_squared());
        assert_eq!(s.kick_all(2.5, |_, _| DVec3::ZERO), 0.0);
        let nan = s.kick_all(3.0, |i, _| {
            DVec3::splat(if i == 4 { f64::NAN } else { 1.0 })
        });
        assert!(
            nan.is_nan(),
            "a speed that is no number is not hidden by a larger one"
        );
    }

    #[test]
    fn faster_keeps_a_nan_in_any_order() {
        for nan in [f64::NAN, -f64::NAN] {
            for other in [0.0, 1.0, f64::INFINITY, nan] {
                assert!(faster(nan, other).is_nan(), "{nan} {other}");
                assert!(faster(other, nan).is_nan(), "{other} {nan}");
            }
        }
        assert_eq!(faster(0.0, 0.0), 0.0);
        assert_eq!(faster(f64::MIN_POSITIVE, 0.0), f64::MIN_POSITIVE);
        assert_eq!(faster(2.0, 3.0), 3.0);
        assert_eq!(faster(3.0, 2.0), 3.0);
        assert_eq!(faster(0.0, f64::INFINITY), f64::INFINITY);
        assert!(beyond(f64::NAN, 1.0) && beyond(4.01, 2.0) && !beyond(4.0, 2.0));
        assert!(!beyond(f64::MAX, f64::INFINITY));
    }

    #[test]
    fn a_speed_is_read_without_overflow() {
        assert_eq!(speed(DVec3::new(3.0, -4.0, 0.0)), 5.0);
        assert!((speed(DVec3::new(0.0, 3e200, -4e200)) / 5e200 - 1.0).abs() < 1e-15);
        assert_eq!(speed(DVec3::ZERO), 0.0);
        assert_eq!(speed(DVec3::new(1.0, f64::INFINITY, 0.0)), f64::INFINITY);
        assert!(speed(DVec3::new(f64::NAN, 1e300, 0.0)).is_nan());
    }

    #[test]
    fn the_first_vertex_beyond_a_speed_limit_is_found_in_the_order_given_and_nan_counts() {
        // Vertex i moves at sqrt(4.09 + i^2): from vertex 5 on, faster than 5.
        let mut s = state(10);
        assert_eq!(s.first_beyond(0..10, 5.0), Some(5));
        assert_eq!(s.first_beyond([2, 7, 6], 5.0), Some(7));
        assert_eq!(s.first_beyond([0, 1, 2, 4], 5.0), None);
        s.v[1].y = f64::NAN;
        assert_eq!(s.first_beyond([0, 1, 2], 5.0), Some(1));
    }

    #[test]
    fn kicks_through_views_write_what_apply_impulse_writes() {
        let (mut direct, mut viewed) = (state(10), state(10));
        let impulse = |i: usize| DVec3::new(1.0 / (i as f64 + 3.0), 0.25, -(i as f64));
        for i in 0..10 {
            direct.apply_impulse(i, 1.7, impulse(i));
        }
        let mut views = viewed.kick_views(&[4, 4, 9]);
        assert_eq!(views.len(), 4);
        let ranges = [0..4, 4..4, 4..9, 9..10];
        for (view, range) in views.iter_mut().zip(ranges) {
            for i in range {
                view.apply_impulse(i, 1.7, impulse(i));
            }
        }
        assert_eq!(direct.x, viewed.x);
        assert_eq!(direct.t, viewed.t);
        assert_eq!(direct.v, viewed.v);
        assert_eq!(
            viewed.t[3],
            0.1 * 3.0,
            "a vertex of zero inverse mass is not written"
        );
    }
}
