//! Retrospective detection over a window's recorded trajectories: which feature pairs came
//! within the activation distance `ACTIVATION * eta(l)` of a layer `l` they did not have
//! active, and when first.
//!
//! **Broad phase.** Each leaf of the k-DOP hierarchy of [`crate::kds`] (a triangle, or a loose
//! edge or vertex) gets a static 18-DOP around the corners of its vertices' paths over the
//! window (a piecewise-linear path lies in the convex hull of its corners), grown by half the
//! first layer's activation distance; a self-traversal of the hierarchy hands every pair of
//! overlapping buckets' feature pairs ([`Leaves::group_features`]) to the narrow phase. The
//! hierarchy's topology is kept between windows and only its volumes refitted, until refits have
//! let it grow loose (as the kinetic broad phase does).
//!
//! **Narrow phase.** A pair's distance is 1-Lipschitz in its vertices' positions: while every
//! vertex of one side moves by at most `a` relative to a common translation and every vertex of
//! the other by at most `b`, the distance changes by at most `a + b`. On each linear piece of the
//! four paths the distance therefore cannot fall below `thr` before `x + (d(x) - thr) / rate`
//! (conservative advancement), so stepping from there never steps over a crossing; the first
//! time it cannot step on (the distance within a relative `1e-9` of `thr`, or 64 steps on one
//! piece) is reported. A report may come early, never late: an early layer only adds ticks.
//! The pair's active layers change in the window (a layer switched on, a layer left), so the
//! threshold is the next layer's over each span between changes.
//!
//! **Audit.** `--audit` checks a clean window again by a different bound: on each piece the
//! distance is at least `(d(a) + d(b) - rate (b - a)) / 2`, bisected until it clears `eta(l)` of
//! the first layer not active (not the activation distance, so that it checks the property, not
//! the detector).

use glam::DVec3;
use rayon::prelude::*;

use super::history::{History, Path};
use crate::contact::layers::LayerSchedule;
use crate::contact::PairKey;
use crate::engine::contact::{feature_distance, LayerChange, ACTIVATION};
use crate::kds::bvh::Bvh;
use crate::kds::kdop::{Dop18, Volume};
use crate::kds::leaves::Leaves;

/// Leaf nodes per rayon task when the volumes are fitted.
const PAR_MIN_LEN: usize = 256;

/// Pairs per rayon task in the narrow phase.
const PAR_PAIRS: usize = 64;

/// A distance within this relative margin of the threshold is reported as reaching it.
const CLOSE: f64 = 1e-9;

/// Conservative-advancement steps on one linear piece before the time reached is reported.
const MAX_STEPS: u32 = 64;

/// Bisections of a piece before the audit gives up proving it clear.
const AUDIT_DEPTH: u32 = 24;

/// The hierarchy is rebuilt when refits have grown its internal volumes past this multiple of
/// their size when built.
const LOOSE: f64 = 2.0;

/// The static volumes' time span: an instant, on which [`Volume::fit`] makes volumes that do
/// not move.
const STATIC: (f64, f64) = (0.0, 0.0);

/// A pair found closer than a layer's activation distance while the layer was off.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Violation {
    /// The first time found (never later than the true one).
    pub(super) time: f64,
    /// The feature pair.
    pub(super) key: PairKey,
    /// The layer it needs on.
    pub(super) layer: u32,
}

/// A feature pair's active layers over a window: the number at the start and its changes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Timeline<'a> {
    /// Active layers at the window's start.
    pub(super) start: u32,
    /// The changes in the window, in time order.
    pub(super) changes: &'a [LayerChange],
}

impl Timeline<'_> {
    /// Calls `f(from, to, last, active)` for each span of constant active layers over
    /// `[start, end]` in order (`[from, to)`, or `[from, to]` for the last), until it returns
    /// something.
    fn spans<T>(
        &self,
        (start, end): (f64, f64),
        mut f: impl FnMut(f64, f64, bool, u32) -> Option<T>,
    ) -> Option<T> {
        let (mut from, mut active) = (start, self.start);
        for c in self.changes {
            if let Some(found) = f(from, c.time, false, active) {
                return Some(found);
            }
            (from, active) = (c.time, c.after);
        }
        f(from, end, true, active)
    }
}

/// The broad phase over swept histories (see the module docs).
#[derive(Debug)]
pub(super) struct Retrospective {
    leaves: Leaves,
    /// Each vertex's volume over the window.
    vertex_vol: Vec<Dop18>,
    bvh: Option<Bvh<Dop18>>,
    /// [`Bvh::spread`] when the hierarchy was built.
    built_spread: f64,
}

/// The four paths of a feature pair.
type Paths<'a> = [Path<'a>; 4];

impl Retrospective {
    /// The detector over these primitives of `vertices` vertices.
    pub(super) fn new(edges: Vec<[u32; 2]>, triangles: Vec<[u32; 3]>, vertices: usize) -> Self {
        Self {
            leaves: Leaves::new(edges, triangles, vertices),
            vertex_vol: Vec::new(),
            bvh: None,
            built_spread: 0.0,
        }
    }

    /// The four vertices of `key`.
    pub(super) fn key_vertices(&self, key: PairKey) -> [u32; 4] {
        self.leaves.key_vertices(key)
    }

    /// Every feature pair whose swept volumes, grown by `reach / 2` each, overlap over the
    /// window of `history`, sorted, each once, into `out`.
    pub(super) fn candidates(&mut self, history: &History, reach: f64, out: &mut Vec<PairKey>) {
        out.clear();
        if self.leaves.is_empty() {
            return;
        }
        self.fit(history, reach / 2.0);
        let bvh = self.bvh.as_ref().expect("fitted above");
        let overlap = |a: u32, b: u32| bvh.vol[a as usize].overlaps_static(&bvh.vol[b as usize]);
        let vol = &self.vertex_vol;
        let union = |vs: &[u32]| {
            (vs[1..].iter()).fold(vol[vs[0] as usize], |u, &v| {
                u.union_static(&vol[v as usize])
            })
        };
        let leaves = &self.leaves;
        // Neighbouring buckets always overlap: each feature pair is filtered by its own sides.
        let mut found = |k: PairKey| {
            let v = leaves.key_vertices(k);
            let (a, b) = match k {
                PairKey::VertexTriangle(..) => (union(&v[..1]), union(&v[1..])),
                PairKey::EdgeEdge(..) => (union(&v[..2]), union(&v[2..])),
            };
            if a.overlaps_static(&b) {
                out.push(k);
            }
        };
        let mut stack = vec![(0u32, 0u32)];
        while let Some((a, b)) = stack.pop() {
            if a == b {
                match bvh.bucket(a) {
                    Some(bucket) => leaves.group_features(bucket, None, &mut found),
                    None => {
                        let [l, r] = bvh.children(a);
                        stack.extend([(l, l), (r, r), (l, r)]);
                    }
                }
                continue;
            }
            if !overlap(a, b) {
                continue;
            }
            match (bvh.bucket(a), bvh.bucket(b)) {
                (Some(x), Some(y)) => leaves.group_features(x, Some(y), &mut found),
                (None, _) => {
                    let [l, r] = bvh.children(a);
                    stack.extend([(l, b), (r, b)]);
                }
                (Some(_), None) => {
                    let [l, r] = bvh.children(b);
                    stack.extend([(a, l), (a, r)]);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// Fits every volume to the window's paths grown by `pad`, building the hierarchy first if
    /// there is none or it has grown loose.
    fn fit(&mut self, history: &History, pad: f64) {
        let loose = self
            .bvh
            .as_ref()
            .is_some_and(|b| b.spread() > LOOSE * self.built_spread);
        if self.bvh.is_none() || loose {
            let centroids: Vec<DVec3> = (0..self.leaves.len() as u32)
                .map(|l| {
                    let (sum, n) = (self.leaves.verts(l)).fold((DVec3::ZERO, 0.0), |(s, n), v| {
                        (s + history.path(v).x[0], n + 1.0)
                    });
                    sum / n
                })
                .collect();
            let empty = Dop18 {
                lo: [0.0; 9],
                hi: [0.0; 9],
                vlo: [0.0; 9],
                vhi: [0.0; 9],
            };
            let leaves = &self.leaves;
            self.bvh = Some(Bvh::build(&centroids, |a, b| leaves.adjacent(a, b), empty));
            self.refit(history, pad);
            self.built_spread = self.bvh.as_ref().map_or(0.0, Bvh::spread);
        } else {
            self.refit(history, pad);
        }
    }

    /// Refits the volumes: every vertex's and then the leaf nodes' in parallel, then the
    /// internal nodes bottom up.
    fn refit(&mut self, history: &History, pad: f64) {
        let n = self.leaves.vertex_leaves.rows();
        self.vertex_vol.clear();
        self.vertex_vol.par_extend(
            (0..n as u32)
                .into_par_iter()
                .with_min_len(PAR_MIN_LEN)
                .map_init(Vec::new, |points, v| {
                    points.clear();
                    history.corners(v, points);
                    Dop18::fit(points, points, STATIC.0, STATIC.1, pad)
                }),
        );
        let bvh = self.bvh.as_mut().expect("built");
        let mut vol = std::mem::take(&mut bvh.vol);
        let (leaves, vertex_vol) = (&self.leaves, &self.vertex_vol);
        let frozen: &Bvh<Dop18> = bvh;
        vol.par_iter_mut()
            .enumerate()
            .with_min_len(PAR_MIN_LEN)
            .for_each(|(n, v)| {
                if let Some(bucket) = frozen.bucket(n as u32) {
                    let mut verts = bucket.iter().flat_map(|&l| leaves.verts(l));
                    let first = vertex_vol[verts.next().expect("a leaf has a vertex") as usize];
                    *v = verts.fold(first, |u, w| u.union_static(&vertex_vol[w as usize]));
                }
            });
        for n in (0..vol.len()).rev() {
            if bvh.bucket(n as u32).is_none() {
                let [a, b] = bvh.children(n as u32);
                vol[n] = vol[a as usize].union_static(&vol[b as usize]);
            }
        }
        bvh.vol = vol;
    }

    /// The four paths of `key`.
    fn paths<'h>(&self, history: &'h History, key: PairKey) -> Paths<'h> {
        self.key_vertices(key).map(|v| history.path(v))
    }

    /// For each of `keys` (with its timeline), the first time it came within the activation
    /// distance of the layer after its active ones, if it did: computed on the thread pool,
    /// returned in `keys` order.
    pub(super) fn violations(
        &self,
        history: &History,
        schedule: &LayerSchedule,
        keys: &[(PairKey, Timeline<'_>)],
    ) -> Vec<Violation> {
        let span = history.span();
        let found: Vec<Option<Violation>> = keys
            .par_iter()
            .with_min_len(PAR_PAIRS)
            .map(|&(key, timeline)| {
                let paths = self.paths(history, key);
                timeline.spans(span, |from, to, last, active| {
                    let layer = active + 1;
                    let thr = ACTIVATION * schedule.eta(layer);
                    first_within(key, &paths, (from, to, last), thr).map(|time| Violation {
                        time,
                        key,
                        layer,
                    })
                })
            })
            .collect();
        found.into_iter().flatten().collect()
    }

    /// The audit of a clean window (see the module docs): the first pair that may have come
    /// closer than `eta(l)` while layer `l` was off, described.
    pub(super) fn audit(
        &self,
        history: &History,
        schedule: &LayerSchedule,
        keys: &[(PairKey, Timeline<'_>)],
    ) -> Result<(), String> {
        let span = history.span();
        let breach = keys
            .par_iter()
            .with_min_len(PAR_PAIRS)
            .map(|&(key, timeline)| {
                let paths = self.paths(history, key);
                timeline.spans(span, |from, to, _, active| {
                    let eta = schedule.eta(active + 1);
                    stays_clear(key, &paths, (from, to), eta)
                        .err()
                        .map(|(a, b)| {
                            format!(
                                "pair {key:?} may have come closer than eta({}) = {eta:e} between \
                             t = {a} and {b} s with {active} layers active",
                                active + 1
                            )
                        })
                })
            })
            .find_first(Option::is_some)
            .flatten();
        breach.map_or(Ok(()), Err)
    }
}

/// The bound on how fast the distance of `key` can change with its vertices moving at `v`:
/// the largest speed on each side relative to their mean velocity, summed.
fn closing_rate(key: PairKey, v: &[DVec3; 4]) -> f64 {
    let w = (v[0] + v[1] + v[2] + v[3]) / 4.0;
    side_sum(key, &v.map(|v| (v - w).length()))
}

/// The largest of `speed` on each side of pair `key`, summed.
fn side_sum(key: PairKey, speed: &[f64; 4]) -> f64 {
    let most = |r: std::ops::Range<usize>| speed[r].iter().copied().fold(0.0, f64::max);
    match key {
        PairKey::VertexTriangle(..) => most(0..1) + most(1..4),
        PairKey::EdgeEdge(..) => most(0..2) + most(2..4),
    }
}

/// The four paths' positions and velocities at `x` on segments `k`, and the next break.
fn piece(paths: &Paths<'_>, k: &[usize; 4], x: f64) -> ([DVec3; 4], [DVec3; 4], f64) {
    let pos = std::array::from_fn(|j| paths[j].at(k[j], x));
    let vel = std::array::from_fn(|j| paths[j].v[k[j]]);
    let next = (0..4)
        .map(|j| paths[j].next_break(k[j]))
        .fold(f64::INFINITY, f64::min);
    (pos, vel, next)
}

/// Moves the segment cursors `k` on to the segments in effect at `x`.
fn catch_up(paths: &Paths<'_>, k: &mut [usize; 4], x: f64) {
    for j in 0..4 {
        while paths[j].next_break(k[j]) <= x {
            k[j] += 1;
        }
    }
}

/// The first time in `[from, to)` (`[from, to]` if `last`) at which pair `key` on `paths` may
/// be within `thr`, by conservative advancement (see the module docs); `None` if it provably
/// stays farther.
pub(super) fn first_within(
    key: PairKey,
    paths: &Paths<'_>,
    (from, to, last): (f64, f64, bool),
    thr: f64,
) -> Option<f64> {
    let beyond = |s: f64| s > to || (!last && s >= to);
    // A bound over the whole window, which steps over many pieces at once.
    let global_rate = side_sum(key, &paths.map(|p| p.fastest));
    let mut k = paths.map(|p| p.segment_at(from));
    let (mut x, mut steps) = (from, 0);
    loop {
        if beyond(x) {
            return None;
        }
        let (pos, vel, next) = piece(paths, &k, x);
        let d = feature_distance(key, &pos);
        if d <= thr * (1.0 + CLOSE) {
            return Some(x);
        }
        let step = |rate: f64| {
            if rate > 0.0 {
                x + (d - thr) / rate
            } else {
                f64::INFINITY
            }
        };
        let safe = step(closing_rate(key, &vel))
            .min(next)
            .max(step(global_rate));
        if beyond(safe) {
            return None;
        }
        if safe >= next {
            x = safe;
            catch_up(paths, &mut k, x);
            steps = 0;
        } else {
            steps += 1;
            if steps > MAX_STEPS || safe <= x {
                return Some(x);
            }
            x = safe;
        }
    }
}

/// Whether pair `key` on `paths` provably stays at least `eta` apart over `[from, to]` (see
/// the module docs); otherwise the piece that could not be cleared.
fn stays_clear(
    key: PairKey,
    paths: &Paths<'_>,
    (from, to): (f64, f64),
    eta: f64,
) -> Result<(), (f64, f64)> {
    let mut k = paths.map(|p| p.segment_at(from));
    let mut a = from;
    loop {
        let (_, vel, next) = piece(paths, &k, a);
        let b = next.min(to);
        let rate = closing_rate(key, &vel);
        let d = |s: f64| feature_distance(key, &std::array::from_fn(|j| paths[j].at(k[j], s)));
        clear_piece(&d, rate, (a, b), (d(a), d(b)), eta, 0)?;
        if b >= to {
            return Ok(());
        }
        a = b;
        catch_up(paths, &mut k, a);
    }
}

/// Whether the distance `d`, changing at most at `rate`, stays at least `eta` on `[a, b]`,
/// where it is `da` and `db`: bisected up to [`AUDIT_DEPTH`] times.
fn clear_piece(
    d: &impl Fn(f64) -> f64,
    rate: f64,
    (a, b): (f64, f64),
    (da, db): (f64, f64),
    eta: f64,
    depth: u32,
) -> Result<(), (f64, f64)> {
    if (da + db - rate * (b - a)) / 2.0 >= eta {
        return Ok(());
    }
    let m = 0.5 * (a + b);
    if da < eta || db < eta || depth == AUDIT_DEPTH || m <= a || m >= b {
        return Err((a, b));
    }
    let dm = d(m);
    clear_piece(d, rate, (a, m), (da, dm), eta, depth + 1)?;
    clear_piece(d, rate, (m, b), (dm, db), eta, depth + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Four piecewise-linear paths over `[0, 1]`: each a start point and `(time, velocity)`
    /// kicks, with positions integrated from them.
    struct Motion {
        time: [Vec<f64>; 4],
        x: [Vec<DVec3>; 4],
        v: [Vec<DVec3>; 4],
    }

    impl Motion {
        fn new(start: [DVec3; 4], kicks: [Vec<(f64, DVec3)>; 4]) -> Self {
            let mut m = Motion {
                time: Default::default(),
                x: Default::default(),
                v: Default::default(),
            };
            for j in 0..4 {
                let mut ks = kicks[j].clone();
                ks.sort_by(|a, b| a.0.total_cmp(&b.0));
                let (mut t, mut x) = (0.0, start[j]);
                m.time[j].push(0.0);
                m.x[j].push(x);
                m.v[j].push(ks.first().map_or(DVec3::ZERO, |k| k.1));
                for &(s, v) in ks.iter().skip(1) {
                    x += (s - t) * *m.v[j].last().unwrap();
                    t = s;
                    m.time[j].push(s);
                    m.x[j].push(x);
                    m.v[j].push(v);
                }
            }
            m
        }

        fn paths(&self) -> Paths<'_> {
            std::array::from_fn(|j| Path {
                time: &self.time[j],
                x: &self.x[j],
                v: &self.v[j],
                fastest: self.v[j].iter().map(|v| v.length()).fold(0.0, f64::max),
            })
        }
    }

    fn vec3() -> impl Strategy<Value = DVec3> {
        (-1.0..1.0f64, -1.0..1.0f64, -1.0..1.0f64).prop_map(|(x, y, z)| DVec3::new(x, y, z))
    }

    fn kicks() -> impl Strategy<Value = Vec<(f64, DVec3)>> {
        prop::collection::vec((0.0..1.0f64, vec3().prop_map(|v| 4.0 * v)), 1..5)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Dense sampling never finds the pair within the threshold before the reported time
        /// (or at all, when none is reported).
        #[test]
        fn never_misses_a_pair_that_comes_within_the_distance(
            start in prop::array::uniform4(vec3()),
            kicks in prop::array::uniform4(kicks()),
            edge_edge in any::<bool>(),
            thr in 0.05..0.5f64,
        ) {
            let m = Motion::new(start, kicks);
            let paths = m.paths();
            let key = if edge_edge { PairKey::EdgeEdge(0, 1) } else { PairKey::VertexTriangle(0, 0) };
            let found = first_within(key, &paths, (0.0, 1.0, true), thr);
            let end = found.unwrap_or(1.0);
            let samples = 20_000;
            for i in 0..=samples {
                let s = end * f64::from(i) / f64::from(samples);
                if found.is_some() && s >= end {
                    break;
                }
                let pos = std::array::from_fn(|j| paths[j].at(paths[j].segment_at(s), s));
                let d = feature_distance(key, &pos);
                prop_assert!(d > thr, "within {thr} at {s} (found {found:?}): {d}");
            }
        }
    }

    #[test]
    fn a_head_on_approach_is_found_where_it_crosses() {
        // A vertex falling at 1 cm/s onto a triangle 1 cm below it: within 0.1 at t = 0.9.
        let m = Motion::new(
            [DVec3::new(0.2, 1.0, 0.2), DVec3::ZERO, DVec3::X, DVec3::Z],
            [
                vec![(0.0, -DVec3::Y)],
                vec![(0.0, DVec3::ZERO)],
                vec![(0.0, DVec3::ZERO)],
                vec![(0.0, DVec3::ZERO)],
            ],
        );
        let key = PairKey::VertexTriangle(0, 0);
        let t = first_within(key, &m.paths(), (0.0, 2.0, true), 0.1).unwrap();
        assert!((t - 0.9).abs() < 1e-6, "{t}");
        assert_eq!(first_within(key, &m.paths(), (0.0, 0.85, false), 0.1), None);
        assert!(stays_clear(key, &m.paths(), (0.0, 0.85), 0.1).is_ok());
        assert!(stays_clear(key, &m.paths(), (0.0, 1.0), 0.1).is_err());
    }
}
