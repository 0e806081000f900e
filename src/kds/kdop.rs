//! Moving bounding volumes: k-DOPs and spheres whose extents are linear functions of time
//! (thesis §5.3 and ch. 7, DESIGN §6).
//!
//! Every volume here is valid on a time interval `[t, t_end]`, where `t_end` is the end of the
//! broad phase's horizon (the "short-circuit": nothing is ever certified past it). A volume is
//! stored by its extent at `t_end` and its rate of change, so that its extent at `s <= t_end` is
//! `extent(t_end) + rate * (s - t_end)`. Extents are kept in `f32` to halve the memory of a
//! hierarchy, rounded *outwards* (lower bounds down, upper bounds up, rates so that the extent
//! only grows for `s < t_end`), so the stored volume always contains the exact one.
//!
//! Two volumes of one kind overlap during one interval of time (the overlap set of two convex
//! volumes moving linearly is convex in time), returned by [`Volume::overlap_interval`]. It is
//! conservative: it contains every instant at which the exact volumes overlap, widened by a
//! relative tolerance of `TOLERANCE` that covers the `f64` rounding of the computation.

use std::sync::atomic::{AtomicU8, Ordering};

use crossbeam::utils::CachePadded;

use glam::{DVec3, Vec3};

/// Where a k-DOP test starts trying its axes (adaptive axis ordering, thesis ch. 8): the axis
/// that separated two volumes last time is tried first next time, so apart volumes are found
/// apart after fewer axes. Every overlap condition is intersected exactly (by `min` and `max`),
/// so the answer is the same bits in any axis order: only its cost depends on the hint.
///
/// Each rayon worker keeps its own slot, on its own cache line: one shared byte written by every
/// test made two threads slower than one thread without hints (measured on `drape_100k`). A slot
/// holds the last two axes promoted: the low four bits the first to try, the high four the one
/// before it (the second screening axis of [`Volume::screening_axes`]).
#[derive(Debug)]
pub(crate) struct AxisHint {
    slots: [CachePadded<AtomicU8>; HINT_SLOTS],
    adaptive: bool,
}

/// Slots of an [`AxisHint`]; workers beyond this many share slots (a lost update only costs
/// time).
const HINT_SLOTS: usize = 64;

impl AxisHint {
    /// A hint starting at axis 0; `adaptive` promotes the separating axis, otherwise the order
    /// stays fixed.
    pub(crate) const fn new(adaptive: bool) -> Self {
        Self {
            slots: [const { CachePadded::new(AtomicU8::new(0)) }; HINT_SLOTS],
            adaptive,
        }
    }

    /// The calling worker's slot.
    #[inline]
    fn slot(&self) -> &AtomicU8 {
        &self.slots[rayon::current_thread_index().unwrap_or(0) % HINT_SLOTS]
    }

    /// Turns promotion on or off.
    pub(crate) fn set_adaptive(&mut self, on: bool) {
        self.adaptive = on;
    }

    /// The axis to try first, below `axes`.
    #[inline]
    fn first(&self, axes: usize) -> usize {
        (self.slot().load(Ordering::Relaxed) as usize & 15).min(axes - 1)
    }

    /// The axis promoted before the first one, below `axes`.
    #[inline]
    fn second(&self, axes: usize) -> usize {
        (self.slot().load(Ordering::Relaxed) as usize >> 4).min(axes - 1)
    }

    /// Records that axis `j` separated.
    #[inline]
    fn promote(&self, j: usize) {
        if self.adaptive {
            let slot = self.slot();
            let old = slot.load(Ordering::Relaxed);
            if old & 15 != j as u8 {
                slot.store((old & 15) << 4 | j as u8, Ordering::Relaxed);
            }
        }
    }
}

/// The fixed axis order `0, 1, 2, ...`, for tests without a hint of their own.
pub(crate) static FIXED_AXES: AxisHint = AxisHint::new(false);

/// The `k`-th axis to try, starting from `first`, of `axes`.
#[inline]
fn rotated(first: usize, k: usize, axes: usize) -> usize {
    let j = first + k;
    if j >= axes {
        j - axes
    } else {
        j
    }
}

/// Relative tolerance of overlap tests: extents closer than this (relative to their magnitude)
/// count as overlapping, which covers the rounding of every `f64` computation below.
pub(crate) const TOLERANCE: f64 = 1e-10;

/// A time span shorter than this fraction of `1 + |t_end|` is treated as an instant: the volume
/// is then constant (the hull of both ends), avoiding huge rates from tiny divisions. It is the
/// kinetic broad phases' time resolution, which bounds the speeds a scene may start with
/// (`Scene::validate`).
pub(crate) const INSTANT: f64 = 1e-9;

/// A bounding volume whose extent moves linearly in time (see the module docs).
pub(crate) trait Volume: Copy + std::fmt::Debug + Send + Sync + 'static {
    /// The smallest volume of this kind, linear in time on `[t, t_end]`, containing every point
    /// `p0[i] + (s - t) (p1[i] - p0[i]) / (t_end - t)` for `s` in `[t, t_end]` grown by `pad`.
    /// `p0` and `p1` are the points at `t` and `t_end` and have the same length.
    fn fit(p0: &[DVec3], p1: &[DVec3], t: f64, t_end: f64, pad: f64) -> Self;

    /// A volume containing both `self` and `other` on `[t, t_end]`.
    fn union(&self, other: &Self, t: f64, t_end: f64) -> Self;

    /// Whether `self` contains `inner` at every time in `[t, t_end]`.
    fn contains(&self, inner: &Self, t: f64, t_end: f64) -> bool;

    /// The interval of times within `[t, t_end]` at which the two volumes may overlap, or `None`
    /// when they stay apart on all of it. Never reports "apart" at a time they overlap. (The
    /// engine asks [`overlap_interval_from`](Self::overlap_interval_from); tests and the kernel
    /// benchmarks ask this.)
    #[cfg(any(test, feature = "bench-kernels"))]
    fn overlap_interval(&self, other: &Self, t: f64, t_end: f64) -> Option<(f64, f64)> {
        self.overlap_interval_from(other, t, t_end, t_end, &FIXED_AXES)
    }

    /// [`overlap_interval`](Self::overlap_interval) within `[t, stop]` only (`stop <= t_end`;
    /// the volumes are stored at `t_end`), trying separating directions in the order `hint`
    /// suggests (k-DOPs; other volumes ignore it). The same answer for every hint. A `stop`
    /// before `t_end` short-circuits the test (thesis §8.1): volumes apart until `stop` are
    /// reported apart, whatever comes after, and an overlap that lasts until `stop` ends there
    /// (or up to a rounding later).
    fn overlap_interval_from(
        &self,
        other: &Self,
        t: f64,
        stop: f64,
        t_end: f64,
        hint: &AxisHint,
    ) -> Option<(f64, f64)>;

    /// Two axes on which `AxisExtent::apart_grown` settles most
    /// [`paths_meet`](Self::paths_meet) tests before the whole one, for k-DOPs the last two that
    /// `hint` promoted (`None`: no such axes). Whatever is apart on one of them, `paths_meet`
    /// finds apart.
    fn screening_axes(_hint: &AxisHint) -> Option<[DVec3; 2]> {
        None
    }

    /// Whether the point `p` lies inside at time `s`, at least `margin` from the boundary.
    fn holds_point(&self, p: DVec3, margin: f64, s: f64, t_end: f64) -> bool;

    /// The volume grown by `d` in every direction.
    fn inflate(&self, d: f64) -> Self;

    /// How big the volume is at the horizon's end: the sum of its slab widths (k-DOPs) or its
    /// diameter (spheres). Summed over a hierarchy's nodes, it measures how loose the
    /// hierarchy has become (`Bvh::spread`).
    fn size(&self) -> f64;

    /// Whether the union of the reference paths `a`, grown by `pad`, may overlap the union of
    /// the paths `b`, grown by `pad`, at some time in `[t, t_end]` (the vertex-triangle and
    /// edge-edge tests of [`super::leaves::References::near`]). Both slices are non-empty.
    /// `hint` orders the axes as in [`overlap_interval_from`](Self::overlap_interval_from).
    /// This default fits a volume to each path; k-DOPs project the paths directly.
    fn paths_meet(
        a: &[&Path],
        b: &[&Path],
        pad: f64,
        (t, t_end): (f64, f64),
        hint: &AxisHint,
    ) -> bool {
        let fit = |p: &Path| Self::fit(&[p.at(t, t_end)], &[p.end], t, t_end, pad);
        let union =
            |ps: &[&Path]| (ps[1..].iter()).fold(fit(ps[0]), |u, p| u.union(&fit(p), t, t_end));
        union(a)
            .overlap_interval_from(&union(b), t, t_end, t_end, hint)
            .is_some()
    }
}

/// A vertex's straight reference path over the horizon: the point `end + (s - t_end) vel` at
/// time `s`.
///
/// The velocity is stored in `f32` (40 bytes a path, not 48). A reference is whatever path is
/// stored: the strays test, the fitted volumes and the `near` filter all read the same rounded
/// velocity, so rounding never loosens a bound; it only moves the reference by `2^-24` of the
/// distance the vertex travels in a horizon, far inside the slack.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Path {
    /// Position at the horizon's end.
    pub(crate) end: DVec3,
    /// Velocity.
    pub(crate) vel: Vec3,
}

impl Path {
    /// The path through `end` at `t_end` with velocity `vel` (rounded to `f32`).
    #[inline]
    pub(crate) fn new(end: DVec3, vel: DVec3) -> Self {
        Self {
            end,
            vel: vel.as_vec3(),
        }
    }

    /// The point at time `s` of a horizon ending at `t_end`.
    #[inline]
    pub(crate) fn at(&self, s: f64, t_end: f64) -> DVec3 {
        self.end + (s - t_end) * self.vel.as_dvec3()
    }
}

/// A union of reference paths projected on one axis over a span `[t, t_end]`: its lower and
/// upper projections at `t` and at `t_end`. Each path's projection is linear in time, so the
/// union's lower bound is concave and its upper bound convex between the two ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AxisExtent {
    lo0: f64,
    lo1: f64,
    hi0: f64,
    hi1: f64,
}

impl AxisExtent {
    /// The extent of no path (the unit of [`union`](Self::union)).
    pub(crate) const EMPTY: Self = Self {
        lo0: f64::INFINITY,
        lo1: f64::INFINITY,
        hi0: f64::NEG_INFINITY,
        hi1: f64::NEG_INFINITY,
    };

    /// The union of the extents of `paths` on axis `d`, with `u = t - t_end`.
    #[inline]
    pub(crate) fn of_paths(paths: &[&Path], d: DVec3, u: f64) -> Self {
        (paths.iter()).fold(Self::EMPTY, |e, p| {
            let x1 = d.dot(p.end);
            let x0 = x1 + u * d.dot(p.vel.as_dvec3());
            Self {
                lo0: e.lo0.min(x0),
                lo1: e.lo1.min(x1),
                hi0: e.hi0.max(x0),
                hi1: e.hi1.max(x1),
            }
        })
    }

    /// The extent of both unions: the same bits as [`of_paths`](Self::of_paths) of both lists.
    #[inline]
    pub(crate) fn union(&self, other: &Self) -> Self {
        Self {
            lo0: self.lo0.min(other.lo0),
            lo1: self.lo1.min(other.lo1),
            hi0: self.hi0.max(other.hi0),
            hi1: self.hi1.max(other.hi1),
        }
    }

    /// Whether the two unions stay apart on this axis over the whole span, with the gap between
    /// them grown by `growth` ([`growth`](Self::growth)`(pad, bound)` for unions grown by `pad`).
    /// Where `bound` is at least the two extents' [`magnitude`](Self::magnitude), the growth is
    /// at least that of [`Volume::paths_meet`]'s test on this axis and rounding is monotonic, so
    /// whatever this finds apart, `paths_meet` finds apart too.
    #[inline]
    pub(crate) fn apart_grown(&self, other: &Self, growth: f64) -> bool {
        Self::gaps_apart(&self.gaps_grown(other, growth))
    }

    /// The largest magnitude of the extent's ends.
    #[inline]
    pub(crate) fn magnitude(&self) -> f64 {
        (self.lo0.abs().max(self.lo1.abs())).max(self.hi0.abs().max(self.hi1.abs()))
    }

    /// How much a gap between two unions grown by `pad` grows, at coordinates of magnitude up
    /// to `bound`: both pads and the rounding tolerance.
    #[inline]
    pub(crate) fn growth(pad: f64, bound: f64) -> f64 {
        2.0 * pad + TOLERANCE * (1.0 + pad + bound)
    }

    /// The two gaps between the unions grown by `pad` (above `self`, above `other`), at `t` and
    /// at `t_end`: the unions overlap on this axis where both are non-negative.
    #[inline]
    fn gaps(&self, other: &Self, pad: f64) -> [(f64, f64); 2] {
        let (a, b) = (self, other);
        let bound = a
            .lo0
            .abs()
            .max(a.hi1.abs())
            .max(b.lo0.abs())
            .max(b.hi1.abs());
        self.gaps_grown(other, Self::growth(pad, bound))
    }

    /// [`gaps`](Self::gaps) with the growth given.
    #[inline]
    fn gaps_grown(&self, other: &Self, growth: f64) -> [(f64, f64); 2] {
        let (a, b) = (self, other);
        [
            (a.hi0 - b.lo0 + growth, a.hi1 - b.lo1 + growth),
            (b.hi0 - a.lo0 + growth, b.hi1 - a.lo1 + growth),
        ]
    }

    /// A gap negative at both ends is negative throughout: apart, with no division.
    #[inline]
    fn gaps_apart(gaps: &[(f64, f64); 2]) -> bool {
        gaps.iter().any(|&(g0, g1)| g0 < 0.0 && g1 < 0.0)
    }
}

/// The next `f32` above `f` (`f32::next_up`, stable only since Rust 1.86).
#[inline]
fn f32_up(f: f32) -> f32 {
    if f.is_nan() || f == f32::INFINITY {
        return f;
    }
    if f == 0.0 {
        return f32::from_bits(1);
    }
    let b = f.to_bits();
    f32::from_bits(if f > 0.0 { b + 1 } else { b - 1 })
}

/// The next `f32` below `f`.
#[inline]
fn f32_down(f: f32) -> f32 {
    -f32_up(-f)
}

/// The next `f64` after `t` (`f64::next_up`, stable only since Rust 1.86).
#[inline]
pub(crate) fn after(t: f64) -> f64 {
    if t.is_nan() || t == f64::INFINITY {
        return t;
    }
    if t == 0.0 {
        return f64::from_bits(1);
    }
    let b = t.to_bits();
    f64::from_bits(if t > 0.0 { b + 1 } else { b - 1 })
}

/// Rounds `x` down to an `f32` (the largest `f32 <= x`).
#[inline]
fn down(x: f64) -> f32 {
    let f = x as f32;
    if f as f64 > x {
        f32_down(f)
    } else {
        f
    }
}

/// Rounds `x` up to an `f32` (the smallest `f32 >= x`).
#[inline]
fn up(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) < x {
        f32_up(f)
    } else {
        f
    }
}

/// Whether `[t, t_end]` is too short to divide by.
#[inline]
fn is_instant(t: f64, t_end: f64) -> bool {
    t_end - t <= INSTANT * (1.0 + t_end.abs())
}

/// How far a bound is pushed outwards before rounding, so that a fitted or merged volume holds
/// its inputs strictly: evaluating it later (in `f64`) cannot land inside them by a rounding.
#[inline]
fn nudge(x: f64) -> f64 {
    1e-12 * (1.0 + x.abs())
}

/// A lower bound `value(t_end) + rate (s - t_end)` through `(t, a)` and `(t_end, b)`, rounded
/// outwards; on an instant, the constant `min(a, b)`.
#[inline]
fn lower_line(a: f64, b: f64, t: f64, t_end: f64) -> (f32, f32) {
    let (a, b) = (a - nudge(a), b - nudge(b));
    if is_instant(t, t_end) {
        return (down(a.min(b)), 0.0);
    }
    let rate = (b - a) / (t_end - t);
    // s - t_end <= 0: a larger rate lowers the bound.
    (down(b), up(rate))
}

/// An upper bound through `(t, a)` and `(t_end, b)`, rounded outwards.
#[inline]
fn upper_line(a: f64, b: f64, t: f64, t_end: f64) -> (f32, f32) {
    let (a, b) = (a + nudge(a), b + nudge(b));
    if is_instant(t, t_end) {
        return (up(a.max(b)), 0.0);
    }
    let rate = (b - a) / (t_end - t);
    (up(b), down(rate))
}

/// Value of the line `(end, rate)` at `s` (with `u = s - t_end`).
#[inline]
fn at(end: f32, rate: f32, u: f64) -> f64 {
    end as f64 + rate as f64 * u
}

/// Unit axes of the k-DOPs: the first `K / 2` of these are the axes of a `K`-DOP
/// (coordinate axes, then the 6 edge diagonals, then the 4 corner diagonals).
fn axis(j: usize) -> DVec3 {
    const S2: f64 = std::f64::consts::FRAC_1_SQRT_2;
    // 1 / sqrt(3)
    const S3: f64 = 0.577_350_269_189_625_8;
    const AXES: [[f64; 3]; 13] = [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [S2, S2, 0.0],
        [S2, 0.0, S2],
        [0.0, S2, S2],
        [S2, -S2, 0.0],
        [S2, 0.0, -S2],
        [0.0, S2, -S2],
        [S3, S3, S3],
        [S3, S3, -S3],
        [S3, -S3, S3],
        [-S3, S3, S3],
    ];
    DVec3::from_array(AXES[j])
}

/// A discrete oriented polytope with `A` slab axes (a `2A`-DOP: `A = 3` is an AABB, 9 an
/// 18-DOP, 13 a 26-DOP), each slab `[lo, hi]` moving linearly in time.
///
/// Four parallel arrays of `A` extents: the overlap test streams `hi`/`lo` of one volume against
/// `lo`/`hi` of the other axis by axis, and the rates sit beside them for the interval roots.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Dop<const A: usize> {
    /// Lower extent along each axis at `t_end`.
    pub(crate) lo: [f32; A],
    /// Upper extent along each axis at `t_end`.
    pub(crate) hi: [f32; A],
    /// Rate of change of `lo`.
    pub(crate) vlo: [f32; A],
    /// Rate of change of `hi`.
    pub(crate) vhi: [f32; A],
}

/// Axis-aligned bounding box (6-DOP).
pub(crate) type Aabb = Dop<3>;
/// 18-DOP: coordinate axes and edge diagonals.
pub(crate) type Dop18 = Dop<9>;
/// 26-DOP: coordinate axes, edge and corner diagonals.
pub(crate) type Dop26 = Dop<13>;

impl<const A: usize> Dop<A> {
    /// Every extent and rate zero: the start of a volume filled in axis by axis.
    pub(crate) const ZERO: Self = Dop {
        lo: [0.0; A],
        hi: [0.0; A],
        vlo: [0.0; A],
        vhi: [0.0; A],
    };

    /// The volume, moving linearly over `[times[0], times[last]]`, that holds the
    /// piecewise-linear path through `points` at `times` (ascending, at least one) grown by
    /// `pad` ([`PathFit`]). Only the tests fit a whole path at once; the engine feeds a
    /// [`PathFit`] point by point.
    #[cfg(test)]
    pub(crate) fn fit_path(times: &[f64], points: &[DVec3], pad: f64) -> Self {
        let last = times.len() - 1;
        let mut fit = PathFit::new((times[0], times[last]), points[0], points[last]);
        for (&s, &p) in times.iter().zip(points) {
            fit.add(s, p);
        }
        fit.volume(pad)
    }

    /// Per axis, the lowest lower and highest upper extent of the volumes `vols[i]`, `i` in
    /// `ids`, at `t` and at `t_end`: `(lo at t, lo at t_end, hi at t, hi at t_end)`. The
    /// union's lower extent is the least of lines, concave in time, so the chord between these
    /// ends lies below it.
    fn extremes(vols: &[Self], ids: &[u32], j: usize, t: f64, t_end: f64) -> (f64, f64, f64, f64) {
        let u = t - t_end;
        let inf = f64::INFINITY;
        ids.iter()
            .fold((inf, inf, -inf, -inf), |(lo0, lo1, hi0, hi1), &i| {
                let v = &vols[i as usize];
                (
                    lo0.min(at(v.lo[j], v.vlo[j], u)),
                    lo1.min(v.lo[j] as f64),
                    hi0.max(at(v.hi[j], v.vhi[j], u)),
                    hi1.max(v.hi[j] as f64),
                )
            })
    }

    /// A volume containing every `vols[i]`, `i` in `ids` (at least one), on `[t, t_end]`:
    /// their [`Volume::union`], made once rather than pair by pair.
    pub(crate) fn union_all(vols: &[Self], ids: &[u32], t: f64, t_end: f64) -> Self {
        let mut out = Self::ZERO;
        for j in 0..A {
            let (lo0, lo1, hi0, hi1) = Self::extremes(vols, ids, j, t, t_end);
            (out.lo[j], out.vlo[j]) = lower_line(lo0, lo1, t, t_end);
            (out.hi[j], out.vhi[j]) = upper_line(hi0, hi1, t, t_end);
        }
        out
    }

    /// The slab `[lo, hi]` along axis `j` at time `s`, for a horizon ending at `t_end`.
    #[inline]
    pub(crate) fn slab(&self, j: usize, s: f64, t_end: f64) -> (f64, f64) {
        let u = s - t_end;
        (
            at(self.lo[j], self.vlo[j], u),
            at(self.hi[j], self.vhi[j], u),
        )
    }
}

/// A [`Dop`] fitted to a piecewise-linear path over `[t, t_end]` point by point: per axis, the
/// chord of the path's projection from its first point to its last, and the largest excursions
/// of the points added below and above it. Path and chord are both linear between the points,
/// so their difference is extreme at one of them, and the volume holds the whole path. On an
/// instant the chord is flat.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PathFit<const A: usize> {
    t: f64,
    t_end: f64,
    /// The chord's value at `t` and its rate, per axis.
    q0: [f64; A],
    rate: [f64; A],
    /// The largest excursions below (negative) and above the chord, per axis.
    below: [f64; A],
    above: [f64; A],
}

impl<const A: usize> PathFit<A> {
    /// The fit of a path over `[t, t_end]` from `first` (at `t`) to `last` (at `t_end`).
    pub(crate) fn new((t, t_end): (f64, f64), first: DVec3, last: DVec3) -> Self {
        let mut fit = PathFit {
            t,
            t_end,
            q0: [0.0; A],
            rate: [0.0; A],
            below: [0.0; A],
            above: [0.0; A],
        };
        for j in 0..A {
            let d = axis(j);
            fit.q0[j] = d.dot(first);
            if !is_instant(t, t_end) {
                fit.rate[j] = (d.dot(last) - fit.q0[j]) / (t_end - t);
            }
        }
        fit.add(t_end, last);
        fit
    }

    /// Adds the path's point `p` at time `s`.
    #[inline]
    pub(crate) fn add(&mut self, s: f64, p: DVec3) {
        for j in 0..A {
            let e = axis(j).dot(p) - (self.q0[j] + self.rate[j] * (s - self.t));
            self.below[j] = self.below[j].min(e);
            self.above[j] = self.above[j].max(e);
        }
    }

    /// The volume holding every point added and the path between them, grown by `pad`.
    pub(crate) fn volume(&self, pad: f64) -> Dop<A> {
        let (t, t_end) = (self.t, self.t_end);
        let mut out = Dop::ZERO;
        for j in 0..A {
            let (q0, q1) = (self.q0[j], self.q0[j] + self.rate[j] * (t_end - t));
            let (lo, hi) = (self.below[j] - pad, self.above[j] + pad);
            (out.lo[j], out.vlo[j]) = lower_line(q0 + lo, q1 + lo, t, t_end);
            (out.hi[j], out.vhi[j]) = upper_line(q0 + hi, q1 + hi, t, t_end);
        }
        out
    }
}

/// Converts `[lo, hi]` in `u = s - t_end` to times within `[t, t_end]`, widened by the rounding
/// of the sum so that the interval never shrinks.
#[inline]
fn to_times(lo: f64, hi: f64, t: f64, t_end: f64) -> (f64, f64) {
    let round = 4.0 * f64::EPSILON * (t_end.abs() + lo.abs().max(hi.abs()));
    let s = if lo <= t - t_end {
        t
    } else {
        (t_end + lo - round).max(t)
    };
    let e = if hi >= 0.0 {
        t_end
    } else {
        (t_end + hi + round).min(t_end)
    };
    (s, e.max(s))
}

/// Intersects `[lo, hi]` with the set of `u` where `g + rate u >= 0`.
#[inline]
fn clip_linear(g: f64, rate: f64, lo: &mut f64, hi: &mut f64) {
    if rate > 0.0 {
        *lo = lo.max(-g / rate);
    } else if rate < 0.0 {
        *hi = hi.min(-g / rate);
    } else if g < 0.0 {
        *lo = f64::INFINITY;
    }
}

impl<const A: usize> Volume for Dop<A> {
    fn fit(p0: &[DVec3], p1: &[DVec3], t: f64, t_end: f64, pad: f64) -> Self {
        let mut out = Self::ZERO;
        for j in 0..A {
            let d = axis(j);
            let (mut lo0, mut hi0, mut lo1, mut hi1) = (
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY,
            );
            for (a, b) in p0.iter().zip(p1) {
                let (x0, x1) = (d.dot(*a), d.dot(*b));
                lo0 = lo0.min(x0);
                hi0 = hi0.max(x0);
                lo1 = lo1.min(x1);
                hi1 = hi1.max(x1);
            }
            (out.lo[j], out.vlo[j]) = lower_line(lo0 - pad, lo1 - pad, t, t_end);
            (out.hi[j], out.vhi[j]) = upper_line(hi0 + pad, hi1 + pad, t, t_end);
        }
        out
    }

    fn union(&self, other: &Self, t: f64, t_end: f64) -> Self {
        let mut out = *self;
        let u = t - t_end;
        for j in 0..A {
            // The min of two lines is concave, so its chord over [t, t_end] lies below it.
            let lo0 = at(self.lo[j], self.vlo[j], u).min(at(other.lo[j], other.vlo[j], u));
            let lo1 = (self.lo[j] as f64).min(other.lo[j] as f64);
            let hi0 = at(self.hi[j], self.vhi[j], u).max(at(other.hi[j], other.vhi[j], u));
            let hi1 = (self.hi[j] as f64).max(other.hi[j] as f64);
            (out.lo[j], out.vlo[j]) = lower_line(lo0, lo1, t, t_end);
            (out.hi[j], out.vhi[j]) = upper_line(hi0, hi1, t, t_end);
        }
        out
    }

    fn contains(&self, inner: &Self, t: f64, t_end: f64) -> bool {
        [t, t_end].into_iter().all(|s| {
            (0..A).all(|j| {
                let (lo, hi) = self.slab(j, s, t_end);
                let (ilo, ihi) = inner.slab(j, s, t_end);
                lo <= ilo && ihi <= hi
            })
        })
    }

    fn overlap_interval_from(
        &self,
        other: &Self,
        t: f64,
        stop: f64,
        t_end: f64,
        hint: &AxisHint,
    ) -> Option<(f64, f64)> {
        // Work in u = s - t_end, on [t - t_end, stop - t_end].
        let (mut lo, mut hi) = (t - t_end, (stop - t_end).min(0.0));
        let first = hint.first(A);
        for k in 0..A {
            let j = rotated(first, k, A);
            // self.hi - other.lo >= 0 and other.hi - self.lo >= 0, each linear in u.
            let (sh, ol) = (self.hi[j] as f64, other.lo[j] as f64);
            let (oh, sl) = (other.hi[j] as f64, self.lo[j] as f64);
            let scale = 1.0 + sh.abs().max(ol.abs()).max(oh.abs()).max(sl.abs());
            let tol = TOLERANCE * scale;
            clip_linear(
                sh - ol + tol,
                self.vhi[j] as f64 - other.vlo[j] as f64,
                &mut lo,
                &mut hi,
            );
            clip_linear(
                oh - sl + tol,
                other.vhi[j] as f64 - self.vlo[j] as f64,
                &mut lo,
                &mut hi,
            );
            if lo > hi {
                hint.promote(j);
                return None;
            }
        }
        Some(to_times(lo, hi, t, t_end))
    }

    fn size(&self) -> f64 {
        (0..A).map(|j| self.hi[j] as f64 - self.lo[j] as f64).sum()
    }

    fn inflate(&self, d: f64) -> Self {
        let mut out = *self;
        for j in 0..A {
            out.lo[j] = down(self.lo[j] as f64 - d);
            out.hi[j] = up(self.hi[j] as f64 + d);
        }
        out
    }

    /// Per axis, the paths' projections are linear in time, so the unions' extents at `t` and
    /// `t_end` bound chords (the lower extent is concave, the upper convex), and each
    /// separation condition is linear in `lambda = (s - t) / (t_end - t)`. The projections are
    /// computed in `f64` from the paths, so no per-vertex volume is stored (144 bytes a vertex
    /// at 18 axes) and nothing is rounded to `f32`. A condition failing at both ends settles
    /// the test with no division (on the drape, 89% of these tests end at their first axis).
    #[inline]
    fn paths_meet(
        a: &[&Path],
        b: &[&Path],
        pad: f64,
        (t, t_end): (f64, f64),
        hint: &AxisHint,
    ) -> bool {
        let u = t - t_end;
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        let first = hint.first(A);
        for k in 0..A {
            let j = rotated(first, k, A);
            let d = axis(j);
            let ea = AxisExtent::of_paths(a, d, u);
            let gaps = ea.gaps(&AxisExtent::of_paths(b, d, u), pad);
            // Nearly all tests end here, at their first axis.
            let apart = AxisExtent::gaps_apart(&gaps);
            if !apart {
                for (g0, g1) in gaps {
                    clip_linear(g0, g1 - g0, &mut lo, &mut hi);
                }
            }
            if apart || lo > hi {
                hint.promote(j);
                return false;
            }
        }
        true
    }

    fn screening_axes(hint: &AxisHint) -> Option<[DVec3; 2]> {
        Some([axis(hint.first(A)), axis(hint.second(A))])
    }

    fn holds_point(&self, p: DVec3, margin: f64, s: f64, t_end: f64) -> bool {
        (0..A).all(|j| {
            let (lo, hi) = self.slab(j, s, t_end);
            let d = axis(j).dot(p);
            d >= lo + margin && d <= hi - margin
        })
    }
}

/// A sphere whose centre moves linearly in time and whose radius is constant on the horizon.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sphere {
    /// Centre at `t_end`.
    pub(crate) centre: [f32; 3],
    /// Velocity of the centre.
    pub(crate) velocity: [f32; 3],
    /// Radius.
    pub(crate) radius: f32,
}

impl Sphere {
    /// The centre at `s`.
    #[inline]
    pub(crate) fn centre_at(&self, s: f64, t_end: f64) -> DVec3 {
        let c = DVec3::new(
            self.centre[0] as f64,
            self.centre[1] as f64,
            self.centre[2] as f64,
        );
        let v = DVec3::new(
            self.velocity[0] as f64,
            self.velocity[1] as f64,
            self.velocity[2] as f64,
        );
        c + (s - t_end) * v
    }

    /// Stores the centres `c0` at `t` and `c1` at `t_end` with radius `r`, growing the radius by
    /// the rounding of the centre line to `f32` so that the stored sphere contains the exact one.
    fn from_line(c0: DVec3, c1: DVec3, r: f64, t: f64, t_end: f64) -> Self {
        let span = t_end - t;
        let v = if is_instant(t, t_end) {
            DVec3::ZERO
        } else {
            (c1 - c0) / span
        };
        // On an instant the centre is c1; the radius must cover c0 too.
        let r = if is_instant(t, t_end) {
            r + (c1 - c0).length()
        } else {
            r
        };
        let centre = c1.to_array().map(|x| x as f32);
        let velocity = v.to_array().map(|x| x as f32);
        let stored = Sphere {
            centre,
            velocity,
            radius: 0.0,
        };
        let err = (stored.centre_at(t_end, t_end) - c1)
            .length()
            .max((stored.centre_at(t, t_end) - c0).length());
        Sphere {
            radius: up((r + err) * (1.0 + 4.0 * f64::EPSILON)),
            ..stored
        }
    }
}

/// The smallest sphere containing the spheres `(ca, ra)` and `(cb, rb)`.
fn enclose(ca: DVec3, ra: f64, cb: DVec3, rb: f64) -> (DVec3, f64) {
    let d = (cb - ca).length();
    if d + rb <= ra {
        return (ca, ra);
    }
    if d + ra <= rb {
        return (cb, rb);
    }
    let r = 0.5 * (d + ra + rb);
    // d > 0 here: otherwise one sphere contains the other.
    (ca + (cb - ca) * ((r - ra) / d), r)
}

impl Volume for Sphere {
    fn fit(p0: &[DVec3], p1: &[DVec3], t: f64, t_end: f64, pad: f64) -> Self {
        let n = p0.len().max(1) as f64;
        let c0 = p0.iter().copied().sum::<DVec3>() / n;
        let c1 = p1.iter().copied().sum::<DVec3>() / n;
        // |p(s) - c(s)| is convex in s: its maximum on [t, t_end] is at an end.
        let r = p0
            .iter()
            .zip(p1)
            .map(|(a, b)| (*a - c0).length().max((*b - c1).length()))
            .fold(0.0, f64::max);
        Sphere::from_line(c0, c1, r + pad, t, t_end)
    }

    fn union(&self, other: &Self, t: f64, t_end: f64) -> Self {
        let (ra, rb) = (self.radius as f64, other.radius as f64);
        let (c0, r0) = enclose(self.centre_at(t, t_end), ra, other.centre_at(t, t_end), rb);
        let (c1, r1) = enclose(
            self.centre_at(t_end, t_end),
            ra,
            other.centre_at(t_end, t_end),
            rb,
        );
        // |c_child(s) - c(s)| + r_child is convex in s: containment at both ends suffices.
        Sphere::from_line(c0, c1, r0.max(r1), t, t_end)
    }

    fn contains(&self, inner: &Self, t: f64, t_end: f64) -> bool {
        [t, t_end].into_iter().all(|s| {
            (inner.centre_at(s, t_end) - self.centre_at(s, t_end)).length() + inner.radius as f64
                <= self.radius as f64
        })
    }

    fn overlap_interval_from(
        &self,
        other: &Self,
        t: f64,
        stop: f64,
        t_end: f64,
        _hint: &AxisHint,
    ) -> Option<(f64, f64)> {
        // |p + q u| <= R for u = s - t_end in [t - t_end, 0].
        let p = self.centre_at(t_end, t_end) - other.centre_at(t_end, t_end);
        let q = self.centre_at(t_end + 1.0, t_end)
            - self.centre_at(t_end, t_end)
            - (other.centre_at(t_end + 1.0, t_end) - other.centre_at(t_end, t_end));
        let r = self.radius as f64 + other.radius as f64;
        let r = r + TOLERANCE * (1.0 + r + p.length());
        let (a, b, c) = (q.dot(q), 2.0 * p.dot(q), p.dot(p) - r * r);
        let (umin, umax) = (t - t_end, (stop - t_end).min(0.0));
        let (lo, hi) = if a <= f64::EPSILON * (b.abs() + c.abs()) {
            // (Nearly) linear: b u + c <= 0.
            let (mut lo, mut hi) = (umin, umax);
            clip_linear(-c, -b, &mut lo, &mut hi);
            (lo, hi)
        } else {
            let disc = b * b - 4.0 * a * c;
            if disc < 0.0 {
                return None;
            }
            let sq = disc.sqrt();
            let k = -0.5 * (b + b.signum() * sq);
            let (mut u1, mut u2) = if k == 0.0 { (0.0, 0.0) } else { (k / a, c / k) };
            if u1 > u2 {
                std::mem::swap(&mut u1, &mut u2);
            }
            // Widen the roots by their rounding.
            let w = 1e-9 * (1.0 + u1.abs().max(u2.abs()));
            (umin.max(u1 - w), umax.min(u2 + w))
        };
        (lo <= hi).then(|| to_times(lo, hi, t, t_end))
    }

    fn holds_point(&self, p: DVec3, margin: f64, s: f64, t_end: f64) -> bool {
        (p - self.centre_at(s, t_end)).length() <= self.radius as f64 - margin
    }

    fn size(&self) -> f64 {
        2.0 * self.radius as f64
    }

    fn inflate(&self, d: f64) -> Self {
        Sphere {
            radius: up(self.radius as f64 + d),
            ..*self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Whether the exact (sampled) volumes of the given trajectories overlap at `s`: there is a
    /// separating axis among the k-DOP's axes iff the k-DOPs do not overlap.
    fn dops_overlap_at<const A: usize>(a: &Dop<A>, b: &Dop<A>, s: f64, t_end: f64) -> bool {
        (0..A).all(|j| {
            let (al, ah) = a.slab(j, s, t_end);
            let (bl, bh) = b.slab(j, s, t_end);
            al <= bh && bl <= ah
        })
    }

    /// A piecewise-linear path: ascending times from 0 to 1 (the first 0, the last 1) and a
    /// point at each.
    fn polyline() -> impl Strategy<Value = (Vec<f64>, Vec<DVec3>)> {
        (prop::collection::vec(0.0..1.0f64, 0..6), point(), point()).prop_flat_map(
            |(mut inner, first, last)| {
                inner.sort_by(f64::total_cmp);
                let times: Vec<f64> = std::iter::once(0.0)
                    .chain(inner)
                    .chain(std::iter::once(1.0))
                    .collect();
                let n = times.len() - 2;
                prop::collection::vec(point(), n).prop_map(move |mid| {
                    let points = std::iter::once(first)
                        .chain(mid)
                        .chain(std::iter::once(last))
                        .collect();
                    (times.clone(), points)
                })
            },
        )
    }

    /// The polyline's point at time `s`.
    fn polyline_at((times, points): &(Vec<f64>, Vec<DVec3>), s: f64) -> DVec3 {
        let k = times.partition_point(|&u| u <= s).clamp(1, times.len() - 1) - 1;
        let span = times[k + 1] - times[k];
        if span == 0.0 {
            return points[k + 1];
        }
        points[k].lerp(points[k + 1], ((s - times[k]) / span).clamp(0.0, 1.0))
    }

    proptest! {
        #[test]
        fn a_path_volume_holds_its_path_grown_by_the_pad(
            path in polyline(),
            pad in 0.0..1.0f64,
        ) {
            let vol = Dop18::fit_path(&path.0, &path.1, pad);
            for i in 0..=200 {
                let s = f64::from(i) / 200.0;
                let p = polyline_at(&path, s);
                for j in 0..9 {
                    let (lo, hi) = vol.slab(j, s, 1.0);
                    let x = axis(j).dot(p);
                    prop_assert!(lo <= x - pad && x + pad <= hi, "axis {j} at {s}: {x} in [{lo}, {hi}]");
                }
            }
        }

        #[test]
        fn a_union_of_path_volumes_holds_each_of_them(
            paths in prop::collection::vec(polyline(), 1..4),
        ) {
            let vols: Vec<Dop18> = paths.iter().map(|p| Dop18::fit_path(&p.0, &p.1, 0.1)).collect();
            let ids: Vec<u32> = (0..vols.len() as u32).collect();
            let union = Dop18::union_all(&vols, &ids, 0.0, 1.0);
            for v in &vols {
                prop_assert!(union.contains(v, 0.0, 1.0));
            }
        }
    }

    #[test]
    fn path_volumes_follow_the_motion_and_not_the_sweep() {
        // Two points 2 apart moving together by 10: their volumes never meet, though the
        // regions they sweep overlap.
        let times = [0.0, 0.5, 1.0];
        let moving = |y: f64| {
            let p = [0.0, 5.0, 10.0].map(|x| DVec3::new(x, y, 0.0));
            Dop18::fit_path(&times, &p, 0.5)
        };
        assert!(moving(0.0)
            .overlap_interval(&moving(2.0), 0.0, 1.0)
            .is_none());
        assert!(moving(0.0)
            .overlap_interval(&moving(0.9), 0.0, 1.0)
            .is_some());
    }

    fn point() -> impl Strategy<Value = DVec3> {
        (-10.0..10.0f64, -10.0..10.0f64, -10.0..10.0f64).prop_map(|(x, y, z)| DVec3::new(x, y, z))
    }

    fn trajectories() -> impl Strategy<Value = (Vec<DVec3>, Vec<DVec3>)> {
        prop::collection::vec((point(), point()), 1..4)
            .prop_map(|v| v.into_iter().unzip::<_, _, Vec<_>, Vec<_>>())
    }

    /// The straight paths from each trajectory's points at `t` to its points at `t_end`.
    fn paths(p: &(Vec<DVec3>, Vec<DVec3>), t: f64, t_end: f64) -> Vec<Path> {
        (p.0.iter().zip(&p.1))
            .map(|(&a, &b)| Path::new(b, (b - a) / (t_end - t)))
            .collect()
    }

    fn refs(paths: &[Path]) -> Vec<&Path> {
        paths.iter().collect()
    }

    /// Points of trajectories at `s`.
    fn sample(p0: &[DVec3], p1: &[DVec3], t: f64, t_end: f64, s: f64) -> Vec<DVec3> {
        let w = (s - t) / (t_end - t);
        p0.iter().zip(p1).map(|(a, b)| a.lerp(*b, w)).collect()
    }

    fn check_dop<const A: usize>(
        a: (Vec<DVec3>, Vec<DVec3>),
        b: (Vec<DVec3>, Vec<DVec3>),
        t: f64,
        span: f64,
        pad: f64,
    ) -> Result<(), TestCaseError> {
        let t_end = t + span;
        let va = Dop::<A>::fit(&a.0, &a.1, t, t_end, pad);
        let vb = Dop::<A>::fit(&b.0, &b.1, t, t_end, pad);
        let interval = va.overlap_interval(&vb, t, t_end);
        for k in 0..=64 {
            let s = t + span * k as f64 / 64.0;
            // The fitted volumes contain the trajectories (grown by pad).
            for p in sample(&a.0, &a.1, t, t_end, s) {
                prop_assert!(va.holds_point(p, pad * (1.0 - 1e-9) - 1e-9, s, t_end));
            }
            // A time at which the volumes overlap is inside the reported interval.
            if dops_overlap_at(&va, &vb, s, t_end) {
                let (lo, hi) = interval.expect("overlapping volumes reported apart");
                prop_assert!(lo <= s && s <= hi, "{s} not in [{lo}, {hi}]");
            }
        }
        // The interval is tight at its ends: the volumes (nearly) touch there.
        if let Some((lo, hi)) = interval {
            prop_assert!(lo <= hi);
            for s in [lo, hi] {
                let close = (0..A).all(|j| {
                    let (al, ah) = va.slab(j, s, t_end);
                    let (bl, bh) = vb.slab(j, s, t_end);
                    al <= bh + 1e-6 && bl <= ah + 1e-6
                });
                prop_assert!(close, "the volumes are apart at the interval end {s}");
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn every_axis_order_gives_the_same_bits_and_promotes_the_separating_axis(
            a in trajectories(), b in trajectories(), c in trajectories(), d in trajectories(),
            t in 0.0..2.0f64, span in 1e-3..1.0f64, first in 0u8..9,
        ) {
            let t_end = t + span;
            let fit = |p: &(Vec<DVec3>, Vec<DVec3>)| Dop18::fit(&p.0, &p.1, t, t_end, 0.1);
            let (va, vb) = (fit(&a), fit(&b));
            let hint = AxisHint::new(true);
            hint.slot().store(first, Ordering::Relaxed);
            let got = va.overlap_interval_from(&vb, t, t_end, t_end, &hint);
            prop_assert_eq!(got, va.overlap_interval(&vb, t, t_end));
            if got.is_none() {
                // The promoted axis separates the pair on its own: tried first, it answers.
                let promoted = hint.slot().load(Ordering::Relaxed);
                let alone = AxisHint::new(false);
                alone.slot().store(promoted, Ordering::Relaxed);
                prop_assert!(va.overlap_interval_from(&vb, t, t_end, t_end, &alone).is_none());
            }
            let hint = AxisHint::new(true);
            hint.slot().store(first, Ordering::Relaxed);
            let (pa, pb) = (paths(&c, t, t_end), paths(&d, t, t_end));
            let (pa, pb) = (refs(&pa), refs(&pb));
            prop_assert_eq!(
                Dop18::paths_meet(&pa, &pb, 0.1, (t, t_end), &hint),
                Dop18::paths_meet(&pa, &pb, 0.1, (t, t_end), &FIXED_AXES)
            );
        }

        /// What the one-axis screen finds apart, the whole path test finds apart, also with the
        /// growth of any bound above the extents' magnitude.
        #[test]
        fn one_axis_apart_means_the_paths_do_not_meet(
            a in trajectories(), b in trajectories(), t in 0.0..2.0f64, span in 1e-3..1.0f64,
            pad in 0.0..0.5f64, first in 0usize..9, looser in 0.0..10.0f64,
        ) {
            let t_end = t + span;
            let (pa, pb) = (paths(&a, t, t_end), paths(&b, t, t_end));
            let (pa, pb) = (refs(&pa), refs(&pb));
            let d = axis(first);
            let (ea, eb) = (AxisExtent::of_paths(&pa, d, t - t_end), AxisExtent::of_paths(&pb, d, t - t_end));
            let meet = Dop18::paths_meet(&pa, &pb, pad, (t, t_end), &FIXED_AXES);
            let bound = ea.magnitude().max(eb.magnitude()) * (1.0 + looser);
            let apart = AxisExtent::gaps_apart(&ea.gaps(&eb, pad));
            if apart || ea.apart_grown(&eb, AxisExtent::growth(pad, bound)) {
                prop_assert!(!meet);
            }
            // The first screening axis is the one the hint tries first.
            let hint = AxisHint::new(true);
            hint.slot().store(first as u8, Ordering::Relaxed);
            prop_assert_eq!(Dop18::screening_axes(&hint).map(|a| a[0]), Some(d));
            // A promotion makes the old first axis the second.
            hint.promote((first + 1) % 9);
            prop_assert_eq!(Dop18::screening_axes(&hint), Some([axis((first + 1) % 9), d]));
        }

        /// The k-DOP path test is conservative: two points of the paths' hulls closer than
        /// `2 pad` at a sampled time are never reported apart; and it is no looser than the
        /// fitted (`f32`, outward-rounded) volumes of the same paths, which contain it.
        #[test]
        fn path_test_is_conservative_and_within_the_fitted_volumes(
            a in trajectories(), b in trajectories(), t in 0.0..2.0f64, span in 1e-3..1.0f64,
            pad in 0.0..2.0f64, now in 0.0..1.0f64,
        ) {
            let t_end = t + span;
            let now = t + now * span;
            let (pa, pb) = (paths(&a, t, t_end), paths(&b, t, t_end));
            let (pa, pb) = (refs(&pa), refs(&pb));
            let meet = Dop18::paths_meet(&pa, &pb, pad, (now, t_end), &FIXED_AXES);
            let fit = |p: &Path| Dop18::fit(&[p.at(now, t_end)], &[p.end], now, t_end, pad);
            let union = |ps: &[&Path]| {
                ps[1..].iter().fold(fit(ps[0]), |u, p| u.union(&fit(p), now, t_end))
            };
            let fitted = union(&pa).overlap_interval(&union(&pb), now, t_end).is_some();
            prop_assert!(!meet || fitted, "exact paths meet but their fitted volumes do not");
            for i in 0..=16 {
                let s = now + (t_end - now) * i as f64 / 16.0;
                // The hulls' centroids and vertices as witnesses.
                let hull = |ps: &[&Path]| {
                    let pts: Vec<DVec3> = ps.iter().map(|p| p.at(s, t_end)).collect();
                    let mid = pts.iter().copied().sum::<DVec3>() / pts.len() as f64;
                    pts.into_iter().chain([mid]).collect::<Vec<_>>()
                };
                let close = hull(&pa).iter().any(|x| {
                    hull(&pb).iter().any(|y| x.distance(*y) < 2.0 * pad * (1.0 - 1e-9))
                });
                prop_assert!(!close || meet, "points {} apart at {s} reported apart", 2.0 * pad);
            }
        }

        #[test]
        fn a_short_circuited_test_answers_as_the_full_one_up_to_its_stop(
            a in trajectories(), b in trajectories(), t in 0.0..2.0f64, span in 1e-3..1.0f64,
            frac in 0.0..1.0f64, pad in 0.0..0.5f64,
        ) {
            let t_end = t + span;
            let stop = t + frac * span;
            let dops = (Dop18::fit(&a.0, &a.1, t, t_end, pad), Dop18::fit(&b.0, &b.1, t, t_end, pad));
            let spheres =
                (Sphere::fit(&a.0, &a.1, t, t_end, pad), Sphere::fit(&b.0, &b.1, t, t_end, pad));
            let answers = [
                (dops.0.overlap_interval(&dops.1, t, t_end),
                 dops.0.overlap_interval_from(&dops.1, t, stop, t_end, &FIXED_AXES)),
                (spheres.0.overlap_interval(&spheres.1, t, t_end),
                 spheres.0.overlap_interval_from(&spheres.1, t, stop, t_end, &FIXED_AXES)),
            ];
            let tol = 1e-9 * (1.0 + t_end);
            for (full, short) in answers {
                match (full, short) {
                    (Some((s, _)), None) => prop_assert!(s > stop - tol, "apart to {stop}, meet at {s}"),
                    (Some((s, _)), Some((s_short, e_short))) => {
                        prop_assert!((s - s_short).abs() <= tol, "{s} vs {s_short}");
                        prop_assert!(e_short <= stop + tol, "{e_short} past {stop}");
                    }
                    (None, short) => prop_assert!(short.is_none(), "{short:?}"),
                }
            }
        }

        #[test]
        fn aabb_overlap_interval_is_conservative(
            a in trajectories(), b in trajectories(), t in 0.0..2.0f64, span in 1e-3..1.0f64,
            pad in 0.0..0.5f64,
        ) {
            check_dop::<3>(a, b, t, span, pad)?;
        }

        #[test]
        fn kdop18_overlap_interval_is_conservative(
            a in trajectories(), b in trajectories(), t in 0.0..2.0f64, span in 1e-3..1.0f64,
            pad in 0.0..0.5f64,
        ) {
            check_dop::<9>(a, b, t, span, pad)?;
        }

        #[test]
        fn kdop26_overlap_interval_is_conservative(
            a in trajectories(), b in trajectories(), t in 0.0..2.0f64, span in 1e-3..1.0f64,
            pad in 0.0..0.5f64,
        ) {
            check_dop::<13>(a, b, t, span, pad)?;
        }

        #[test]
        fn sphere_overlap_interval_is_conservative(
            a in trajectories(), b in trajectories(), t in 0.0..2.0f64, span in 1e-3..1.0f64,
            pad in 0.0..0.5f64,
        ) {
            let t_end = t + span;
            let va = Sphere::fit(&a.0, &a.1, t, t_end, pad);
            let vb = Sphere::fit(&b.0, &b.1, t, t_end, pad);
            let interval = va.overlap_interval(&vb, t, t_end);
            for k in 0..=64 {
                let s = t + span * k as f64 / 64.0;
                for p in sample(&a.0, &a.1, t, t_end, s) {
                    prop_assert!(va.holds_point(p, pad * (1.0 - 1e-9) - 1e-9, s, t_end));
                }
                let d = (va.centre_at(s, t_end) - vb.centre_at(s, t_end)).length();
                if d <= va.radius as f64 + vb.radius as f64 {
                    let (lo, hi) = interval.expect("overlapping spheres reported apart");
                    prop_assert!(lo <= s && s <= hi, "{s} not in [{lo}, {hi}]");
                }
            }
        }

        #[test]
        fn union_contains_both_children(
            a in trajectories(), b in trajectories(), t in 0.0..2.0f64, span in 1e-3..1.0f64,
            mid in 0.0..1.0f64,
        ) {
            let t_end = t + span;
            let s = t + mid * span;
            let (a18, b18) = (
                Dop18::fit(&a.0, &a.1, t, t_end, 0.1),
                Dop18::fit(&b.0, &b.1, t, t_end, 0.1),
            );
            let u = a18.union(&b18, s, t_end);
            prop_assert!(u.contains(&a18, s, t_end) && u.contains(&b18, s, t_end));
            let (sa, sb) = (
                Sphere::fit(&a.0, &a.1, t, t_end, 0.1),
                Sphere::fit(&b.0, &b.1, t, t_end, 0.1),
            );
            let u = sa.union(&sb, s, t_end);
            // Containment up to the rounding of the radius.
            for x in [s, t_end] {
                for c in [&sa, &sb] {
                    let d = (c.centre_at(x, t_end) - u.centre_at(x, t_end)).length();
                    prop_assert!(d + c.radius as f64 <= u.radius as f64 * (1.0 + 1e-6));
                }
            }
        }
    }

    #[test]
    fn next_float_helpers_step_by_one_ulp() {
        for x in [0.0f32, 1.0, -1.0, 3.5e-3, -7.25e6] {
            assert!(f32_up(x) > x && f32_down(x) < x);
            assert_eq!(f32_down(f32_up(x)), if x == 0.0 { 0.0 } else { x });
        }
        for t in [0.0, 1.0, -2.0, 0.04] {
            assert!(after(t) > t);
        }
    }

    #[test]
    fn approaching_boxes_start_overlapping_when_the_gap_closes() {
        // Two unit boxes 3 apart along x approach at a combined speed of 2: the gap of 1 closes
        // at s = 0.5.
        let a = Aabb::fit(
            &[DVec3::ZERO, DVec3::ONE],
            &[DVec3::X, DVec3::ONE + DVec3::X],
            0.0,
            1.0,
            0.0,
        );
        let b = Aabb::fit(
            &[DVec3::new(2.0, 0.0, 0.0), DVec3::new(3.0, 1.0, 1.0)],
            &[DVec3::new(1.0, 0.0, 0.0), DVec3::new(2.0, 1.0, 1.0)],
            0.0,
            1.0,
            0.0,
        );
        let (lo, hi) = a.overlap_interval(&b, 0.0, 1.0).unwrap();
        assert!((lo - 0.5).abs() < 1e-6, "{lo}");
        assert_eq!(hi, 1.0);
        // Seen from t = 0.6 they overlap at once.
        assert_eq!(a.overlap_interval(&b, 0.6, 1.0).unwrap().0, 0.6);
    }

    #[test]
    fn diagonal_axes_separate_what_boxes_cannot() {
        // A diagonal segment and a point inside its bounding box but off the diagonal: the boxes
        // overlap, the 18-DOPs (axis (1, 1, 0)) do not.
        let seg = [DVec3::new(0.0, 1.0, 0.0), DVec3::new(1.0, 0.0, 0.0)];
        let pt = [DVec3::new(0.9, 0.9, 0.0)];
        let box_a = Aabb::fit(&seg, &seg, 0.0, 1.0, 0.1);
        let box_b = Aabb::fit(&pt, &pt, 0.0, 1.0, 0.1);
        assert!(box_a.overlap_interval(&box_b, 0.0, 1.0).is_some());
        let d_a = Dop18::fit(&seg, &seg, 0.0, 1.0, 0.1);
        let d_b = Dop18::fit(&pt, &pt, 0.0, 1.0, 0.1);
        assert!(d_a.overlap_interval(&d_b, 0.0, 1.0).is_none());
    }
}
