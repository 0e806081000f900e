//! Retrospective detection over a window's recorded trajectories: which feature pairs came
//! within the activation distance `ACTIVATION * eta(l)` of a layer `l` they did not have
//! active, and when first.
//!
//! **Broad phase.** Each vertex gets an 18-DOP moving linearly over the window that holds its
//! path ([`PathFit`](crate::kds::kdop::PathFit): per axis, the chord of the path shifted by its
//! largest excursions), grown by half the first layer's activation distance. Moving volumes
//! follow the motion: two features that travel together never meet, however far they go, where
//! volumes around everything each swept would hold every pair a fast part passes. Each leaf of
//! the k-DOP hierarchy of [`crate::kds`] (a triangle, or a loose edge or vertex) holds its
//! vertices' volumes; a self-traversal of the hierarchy, shared out over the thread pool, hands
//! each pair of leaves in overlapping buckets whose own volumes may meet, and then each of their
//! feature pairs whose sides' volumes may meet, to the narrow phase. Each of those tests reads
//! the volumes' extents at the window's two ends, worked out once a refit for every vertex, leaf
//! and node: the volumes move linearly, so every gap is linear in time, and two volumes may
//! meet only where all their gaps are non-negative. The hierarchy's topology is kept
//! between windows and only its volumes refitted, until refits have let it grow loose (as the
//! kinetic broad phase does).
//!
//! **Narrow phase.** A pair's distance is 1-Lipschitz in its vertices' positions: while every
//! vertex of one side moves by at most `a` relative to a common translation and every vertex of
//! the other by at most `b`, the distance changes by at most `a + b`. On each linear piece of the
//! four paths the distance therefore cannot fall below `thr` before `x + (d(x) - thr) / rate`
//! (conservative advancement), so stepping from there never steps over a crossing; the first
//! time it cannot step on (the distance within a relative `1e-9` of `thr`, or 64 steps on one
//! piece) is reported. A report may come early, never late: an early layer only adds ticks.
//! The pair's active layers change in the window (a layer switched on, a layer left), so the
//! threshold is the next layer's over each span between changes. Past the first find the same
//! path is searched for the deeper layers' distances too, down to the layer where the layers
//! would hold the pair's kinetic energy of approach, and before it for twice the found layer's,
//! which is when the layer is switched on: both save runs of the window, and neither changes
//! the motion, as a layer applies nothing to a pair beyond its thickness. The recorded
//! paths are simplified to within a deviation of the paths taken ([`History`]), so every
//! distance looked for, the audit's included, is widened by the deviations of the pair's two
//! sides, and every vertex volume by its own.
//!
//! **Audit.** `--audit` checks a clean window again by a different bound: on each piece the
//! distance is at least `(d(a) + d(b) - rate (b - a)) / 2`, bisected until it clears `eta(l)` of
//! the first layer not active (not the activation distance, so that it checks the property, not
//! the detector).

use glam::DVec3;
use rayon::prelude::*;

use super::history::{History, Path};
use crate::engine::contact::{feature_distance, LayerChange, ACTIVATION, KINEMATIC_REACH};
use crate::kds::bvh::{Bvh, NodeId};
use crate::kds::kdop::{Dop18, Volume, TOLERANCE};
use crate::kds::leaves::{LeafId, Leaves};
use crate::penalty::layers::LayerSchedule;
use crate::penalty::{ContactKey, PairKey};
use crate::profiling::zone;
use crate::state::VertexId;

/// Leaf nodes per rayon task when the volumes are fitted.
const PAR_MIN_LEN: usize = 256;

/// Node pairs the hierarchy's self-traversal is shared out as, at least.
const TRAVERSAL_TASKS: usize = 64;

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

/// Layers past the first one a pair needs that are looked for on the same recorded path: a
/// pair that comes in fast needs several, and each one found in the same check saves a run of
/// the window (the layer above it would have to act first for the next check to find it).
/// Two ran the knot 5% faster, but `projectiles_nails` 5x slower: a layer switched on that a
/// pair never reaches ticks idle, and deep layers tick fast. A pair found again deeper gets
/// one more layer instead (`sinking` in the scheduler).
const LOOKAHEAD_LAYERS: u32 = 1;

/// [`stopping_layer`] asks the layers to store this many times a pair's kinetic energy of
/// approach. The mass it takes already errs deep; twice the energy switched on more idle deep
/// layers than it saved runs of the window.
const STOP_MARGIN: f64 = 1.0;

/// Layers past a pair's active ones that [`stopping_layer`] looks at, at most.
const DEEPEST_LOOKAHEAD: u32 = 64;

/// A layer found needed is switched on when its pair first came within this many times its
/// activation distance on the recorded path: a run with more layers on moves the pair, and
/// one that then comes in earlier than recorded would need another run.
const EARLY_REACH: f64 = 2.0;

/// A layer found needed acts on a run, so that the run must be rolled back, where its pair may
/// have come within this many times its thickness: the margin keeps a run that stands
/// provably clear of every layer it did not have, for the audit.
const ACT_MARGIN: f64 = 1.01;

/// A pair found closer than a layer's activation distance while the layer was off.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Violation {
    /// The first time found (never later than the true one).
    pub(super) time: f64,
    /// The feature pair.
    pub(super) key: PairKey,
    /// The layer it needs on.
    pub(super) layer: u32,
    /// When to switch the layer on: the first time the pair came within [`EARLY_REACH`] times
    /// the activation distance, no later than `time`. Switching a layer on early only adds
    /// ticks that apply nothing, as the pair is still beyond the layer's thickness.
    pub(super) switch_on: f64,
}

/// A feature pair's active layers over the span checked: the number at its start and its
/// changes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Timeline<'a> {
    /// Active layers at the span's start.
    pub(super) start: u32,
    /// The changes in the span, in time order.
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
    /// Each vertex's volume's extents at the window's ends.
    vertex_ends: Vec<Ends>,
    /// Each leaf's (the union of its vertices'), likewise.
    leaf_ends: Vec<Ends>,
    /// Each hierarchy node's volume's, likewise.
    node_ends: Vec<Ends>,
    bvh: Option<Bvh<Dop18>>,
    /// [`Bvh::spread`] when the hierarchy was built.
    built_spread: f64,
    /// The candidate filter's allowance for rounding: [`TOLERANCE`] relative to the largest
    /// extent of any vertex or node volume, so no less than each pair's own relative one, and
    /// worked out once a check instead of once for every axis of every pair tested.
    tolerance: f64,
}

/// The four paths of a feature pair.
type Paths<'a> = [Path<'a>; 4];

impl Retrospective {
    /// The detector over these primitives of `vertices` vertices.
    pub(super) fn new(edges: Vec<[u32; 2]>, triangles: Vec<[u32; 3]>, vertices: usize) -> Self {
        Self {
            leaves: Leaves::new(edges, triangles, vertices),
            vertex_vol: Vec::new(),
            vertex_ends: Vec::new(),
            leaf_ends: Vec::new(),
            node_ends: Vec::new(),
            bvh: None,
            built_spread: 0.0,
            tolerance: 0.0,
        }
    }

    /// The four vertices of `key`.
    pub(super) fn key_vertices(&self, key: PairKey) -> [u32; 4] {
        self.leaves.key_vertices(key).map(VertexId::get)
    }

    /// Every feature pair whose swept volumes, grown by `reach / 2` each, may overlap at some
    /// time of the window of `history`, sorted, each once, into `out`.
    pub(super) fn candidates(&mut self, history: &History, reach: f64, out: &mut Vec<PairKey>) {
        out.clear();
        if self.leaves.is_empty() {
            return;
        }
        self.fit(history, reach / 2.0);
        // Node pairs, expanded breadth first until there are enough to share out.
        let mut frontier = vec![(NodeId::ROOT, NodeId::ROOT)];
        while frontier.len() < TRAVERSAL_TASKS {
            let mut next = Vec::with_capacity(2 * frontier.len());
            let mut expanded = false;
            for &pair in &frontier {
                expanded |= self.descend(pair, &mut |p| next.push(p), &mut |k| out.push(k));
            }
            frontier = next;
            if !expanded {
                break;
            }
        }
        let found: Vec<Vec<PairKey>> = frontier
            .par_iter()
            .map_init(
                || zone!("check_task"),
                |_, &pair| {
                    let (mut stack, mut found) = (vec![pair], Vec::new());
                    while let Some(pair) = stack.pop() {
                        self.descend(pair, &mut |p| stack.push(p), &mut |k| found.push(k));
                    }
                    found
                },
            )
            .collect();
        out.extend(found.into_iter().flatten());
        out.sort_unstable();
        out.dedup();
    }

    /// One step of the hierarchy's self-traversal at node pair `(a, b)` (`a == b`: within one
    /// node): hands the feature pairs of two buckets whose own volumes may meet to `found`,
    /// or the child pairs to `push`. Returns whether it pushed any.
    fn descend(
        &self,
        (a, b): (NodeId, NodeId),
        push: &mut impl FnMut((NodeId, NodeId)),
        found: &mut impl FnMut(PairKey),
    ) -> bool {
        let bvh = self.bvh.as_ref().expect("fitted");
        let leaves = &self.leaves;
        // Neighbouring buckets always overlap: each leaf pair, and then each feature pair, is
        // filtered by its own sides.
        let mut near = |k: PairKey| {
            let v = leaves.key_vertices(k).map(VertexId::get);
            let (p, q) = sides(k, &v);
            if Ends::unions_meet(&self.vertex_ends, p, q, self.tolerance) {
                found(k);
            }
        };
        if a == b {
            return match bvh.bucket(a) {
                Some(bucket) => {
                    for (i, &p) in bucket.iter().enumerate() {
                        for &q in &bucket[i + 1..] {
                            self.leaf_features(p, q, &mut near);
                        }
                    }
                    false
                }
                None => {
                    let [l, r] = bvh.children(a);
                    [(l, l), (r, r), (l, r)].into_iter().for_each(push);
                    true
                }
            };
        }
        if !Ends::unions_meet(&self.node_ends, &[a.get()], &[b.get()], self.tolerance) {
            return false;
        }
        match (bvh.bucket(a), bvh.bucket(b)) {
            (Some(x), Some(y)) => {
                for &p in x {
                    for &q in y {
                        self.leaf_features(p, q, &mut near);
                    }
                }
                return false;
            }
            (None, _) => {
                let [l, r] = bvh.children(a);
                [(l, b), (r, b)].into_iter().for_each(push);
            }
            (Some(_), None) => {
                let [l, r] = bvh.children(b);
                [(a, l), (a, r)].into_iter().for_each(push);
            }
        }
        true
    }

    /// Hands the feature pairs of leaves `p` and `q` to `near` if the leaves' volumes may meet,
    /// each feature pair by the leaves that own its vertex and edges only
    /// ([`Leaves::owned_features`]).
    fn leaf_features(&self, p: LeafId, q: LeafId, near: &mut impl FnMut(PairKey)) {
        if Ends::unions_meet(&self.leaf_ends, &[p.get()], &[q.get()], self.tolerance) {
            self.leaves.owned_features(p, q, near);
        }
    }

    /// Fits every volume to the window's paths grown by `pad`, building the hierarchy first if
    /// there is none or it has grown loose.
    fn fit(&mut self, history: &History, pad: f64) {
        let loose = self
            .bvh
            .as_ref()
            .is_some_and(|b| b.spread() > LOOSE * self.built_spread);
        if self.bvh.is_none() || loose {
            let centroids: Vec<DVec3> = (self.leaves.ids())
                .map(|l| {
                    let (sum, n) = (self.leaves.verts(l)).fold((DVec3::ZERO, 0.0), |(s, n), v| {
                        (s + history.start_position(v.get()), n + 1.0)
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

    /// Refits the volumes, each moving linearly over the window: every vertex's and then the
    /// leaf nodes' in parallel, then the internal nodes bottom up.
    fn refit(&mut self, history: &History, pad: f64) {
        let (t, t_end) = history.span();
        let n = self.leaves.vertex_count();
        self.vertex_vol.clear();
        self.vertex_vol.par_extend(
            (0..n as u32)
                .into_par_iter()
                .with_min_len(PAR_MIN_LEN)
                .map_init(|| zone!("check_task"), |_, v| history.volume(v, pad)),
        );
        Ends::of_all(&self.vertex_vol, (t, t_end), &mut self.vertex_ends);
        self.tolerance = TOLERANCE * (1.0 + Ends::magnitude(&self.vertex_ends));
        let (leaves, vertex_ends) = (&self.leaves, &self.vertex_ends);
        self.leaf_ends.clear();
        (self.leaf_ends).par_extend(
            (0..leaves.len() as u32)
                .into_par_iter()
                .with_min_len(PAR_MIN_LEN)
                .map_init(
                    || zone!("check_task"),
                    |_, l| {
                        let verts = leaves.verts(LeafId::new(l));
                        Ends::union(verts.map(|v| &vertex_ends[v.index()]))
                    },
                ),
        );
        let bvh = self.bvh.as_mut().expect("built");
        let mut vol = std::mem::take(&mut bvh.vol);
        let (leaves, vertex_vol) = (&self.leaves, &self.vertex_vol);
        let frozen: &Bvh<Dop18> = bvh;
        vol.par_iter_mut()
            .enumerate()
            .with_min_len(PAR_MIN_LEN)
            .for_each_init(
                || (zone!("check_task"), Vec::new()),
                |(_, verts), (n, v)| {
                    if let Some(bucket) = frozen.bucket(NodeId::from_usize(n)) {
                        verts.clear();
                        let ids = bucket.iter().flat_map(|&l| leaves.verts(l));
                        verts.extend(ids.map(VertexId::get));
                        *v = Dop18::union_all(vertex_vol, verts, t, t_end);
                    }
                },
            );
        for n in bvh.ids().rev() {
            if bvh.bucket(n).is_none() {
                let [a, b] = bvh.children(n);
                vol[n.index()] = vol[a.index()].union(&vol[b.index()], t, t_end);
            }
        }
        Ends::of_all(&vol, (t, t_end), &mut self.node_ends);
        self.tolerance = self
            .tolerance
            .max(TOLERANCE * (1.0 + Ends::magnitude(&self.node_ends)));
        bvh.vol = vol;
    }

    /// The four paths of `key`.
    fn paths<'h>(&self, history: &'h History, key: PairKey) -> Paths<'h> {
        self.key_vertices(key).map(|v| history.path(v))
    }

    /// For each of `keys` (with its timeline), the first time it came within the activation
    /// distance of the layer after its active ones, if it did, and the first times it came
    /// within those of the deeper layers it needs after that on the same span
    /// ([`needed_layers`]; `inv_mass` per vertex): computed on the thread pool, returned in
    /// `keys` order, each pair's by layer.
    pub(super) fn violations(
        &self,
        history: &History,
        schedule: &LayerSchedule,
        inv_mass: &[f64],
        keys: &[(PairKey, Timeline<'_>)],
    ) -> Vec<Violation> {
        let span = history.span();
        let found: Vec<Vec<Violation>> = keys
            .par_iter()
            .with_min_len(PAR_PAIRS)
            .map_init(
                || zone!("check_task"),
                |_, &(key, timeline)| {
                    let paths = self.paths(history, key);
                    let pair = Pair {
                        key,
                        paths: &paths,
                        inv_mass: self.key_vertices(key).map(|v| inv_mass[v as usize]),
                    };
                    timeline
                        .spans(span, |from, to, last, active| {
                            let found = needed_layers(&pair, (from, to, last), active, schedule);
                            (!found.is_empty()).then_some(found)
                        })
                        .unwrap_or_default()
                },
            )
            .collect();
        found.into_iter().flatten().collect()
    }

    /// Whether any of `keys` (with its timeline) may have come within [`ACT_MARGIN`] times the
    /// thickness of the first layer it did not have active: a layer that would have applied
    /// an impulse had it been on.
    pub(super) fn may_act(
        &self,
        history: &History,
        schedule: &LayerSchedule,
        keys: &[(PairKey, Timeline<'_>)],
    ) -> bool {
        let span = history.span();
        (keys.par_iter().with_min_len(PAR_PAIRS))
            .map_init(
                || zone!("check_task"),
                |_, &(key, timeline)| {
                    may_act(key, &self.paths(history, key), timeline, span, schedule)
                },
            )
            .any(|acts| acts)
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
            .map_init(
                || zone!("check_task"),
                |_, &(key, timeline)| {
                    let paths = self.paths(history, key);
                    timeline.spans(span, |from, to, _, active| {
                        let layer = active + 1;
                        let eta = schedule.eta(layer);
                        let (a, b) = stays_clear(key, &paths, (from, to), eta).err()?;
                        Some(format!(
                            "pair {key:?} may have come closer than eta({layer}) = {eta:e} \
                             between t = {a} and {b} s with {active} layers active"
                        ))
                    })
                },
            )
            .find_first(Option::is_some)
            .flatten();
        breach.map_or(Ok(()), Err)
    }
}

/// A vertex volume's extents along each axis at the window's start and end, in `f64`: what
/// the candidate filter reads, so that each feature pair's test only takes minima and maxima.
#[derive(Clone, Copy, Debug)]
struct Ends {
    lo0: [f64; AXES],
    lo1: [f64; AXES],
    hi0: [f64; AXES],
    hi1: [f64; AXES],
}

/// Slab axes of a [`Dop18`].
const AXES: usize = 9;

impl Ends {
    /// The extents of `vol` at `t` and `t_end`.
    fn of(vol: &Dop18, (t, t_end): (f64, f64)) -> Self {
        let mut out = Ends {
            lo0: [0.0; AXES],
            lo1: [0.0; AXES],
            hi0: [0.0; AXES],
            hi1: [0.0; AXES],
        };
        for j in 0..AXES {
            (out.lo0[j], out.hi0[j]) = vol.slab(j, t, t_end);
            (out.lo1[j], out.hi1[j]) = vol.slab(j, t_end, t_end);
        }
        out
    }

    /// The extents of the union of `ends` (at least one): per axis, the least lower and the
    /// greatest upper extent at each end.
    fn union<'a>(mut ends: impl Iterator<Item = &'a Ends>) -> Self {
        let mut out = *ends.next().expect("at least one");
        for e in ends {
            for j in 0..AXES {
                out.lo0[j] = out.lo0[j].min(e.lo0[j]);
                out.lo1[j] = out.lo1[j].min(e.lo1[j]);
                out.hi0[j] = out.hi0[j].max(e.hi0[j]);
                out.hi1[j] = out.hi1[j].max(e.hi1[j]);
            }
        }
        out
    }

    /// The extents of each of `vols` at `t` and `t_end`, into `out`, on the thread pool.
    fn of_all(vols: &[Dop18], (t, t_end): (f64, f64), out: &mut Vec<Ends>) {
        out.clear();
        out.par_extend(
            (vols.par_iter())
                .with_min_len(PAR_MIN_LEN)
                .map_init(|| zone!("check_task"), |_, v| Ends::of(v, (t, t_end))),
        );
    }

    /// The largest magnitude of any extent of `ends` (0 for none).
    fn magnitude(ends: &[Ends]) -> f64 {
        (ends.par_iter().with_min_len(PAR_MIN_LEN))
            .map_init(
                || zone!("check_task"),
                |_, e| {
                    (e.lo0.iter().chain(&e.lo1).chain(&e.hi0).chain(&e.hi1))
                        .fold(0.0f64, |m, x| m.max(x.abs()))
                },
            )
            .reduce(|| 0.0, f64::max)
    }

    /// Whether the union of the volumes `ends[i]`, `i` in `a`, may overlap the union of those
    /// in `b` at some time of the window (both non-empty). Per axis, a union's lower extent is
    /// the least of lines, concave in time, so the chord between its ends lies below it; each
    /// side's gap on a chord is linear in the time, and the pair may meet only where every
    /// gap is non-negative. Every gap is widened by `tol`, which covers the rounding of the
    /// extents (at least [`TOLERANCE`] times one plus their magnitude).
    fn unions_meet(ends: &[Ends], a: &[u32], b: &[u32], tol: f64) -> bool {
        let side = |ids: &[u32], j: usize| {
            let inf = f64::INFINITY;
            ids.iter()
                .fold((inf, inf, -inf, -inf), |(lo0, lo1, hi0, hi1), &i| {
                    let e = &ends[i as usize];
                    (
                        lo0.min(e.lo0[j]),
                        lo1.min(e.lo1[j]),
                        hi0.max(e.hi0[j]),
                        hi1.max(e.hi1[j]),
                    )
                })
        };
        // In lambda = (s - t) / (t_end - t), on [0, 1].
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for j in 0..AXES {
            let (alo0, alo1, ahi0, ahi1) = side(a, j);
            let (blo0, blo1, bhi0, bhi1) = side(b, j);
            let gaps = [
                (ahi0 - blo0 + tol, ahi1 - blo1 + tol),
                (bhi0 - alo0 + tol, bhi1 - alo1 + tol),
            ];
            for (g0, g1) in gaps {
                if g0 < 0.0 && g1 < 0.0 {
                    return false;
                }
                // g0 + (g1 - g0) lambda >= 0.
                if g0 < 0.0 {
                    lo = lo.max(-g0 / (g1 - g0));
                } else if g1 < 0.0 {
                    hi = hi.min(g0 / (g0 - g1));
                }
            }
            if lo > hi {
                return false;
            }
        }
        true
    }
}

/// Whether `key` on `paths` may have come within [`ACT_MARGIN`] times the thickness of the
/// first layer it did not have active over `span`, its active layers following `timeline`.
fn may_act(
    key: PairKey,
    paths: &Paths<'_>,
    timeline: Timeline<'_>,
    span: (f64, f64),
    schedule: &LayerSchedule,
) -> bool {
    timeline
        .spans(span, |from, to, last, active| {
            let thickness = ACT_MARGIN * schedule.eta(active + 1);
            first_within(key, paths, (from, to, last), thickness)
        })
        .is_some()
}

/// The bound on how fast the distance of `key` can change with its vertices moving at `v`:
/// the largest speed on each side relative to their mean velocity, summed.
fn closing_rate(key: PairKey, v: &[DVec3; 4]) -> f64 {
    let w = (v[0] + v[1] + v[2] + v[3]) / 4.0;
    side_sum(key, &v.map(|v| (v - w).length()))
}

/// The two sides of pair `key`'s per-vertex values `x` (its vertex or edge first).
fn sides<T>(key: PairKey, x: &[T; 4]) -> (&[T], &[T]) {
    x.split_at(ContactKey::Feature(key).a_count())
}

/// The largest of `speed` on each side of pair `key`, summed.
fn side_sum(key: PairKey, speed: &[f64; 4]) -> f64 {
    let most = |side: &[f64]| side.iter().copied().fold(0.0, f64::max);
    let (a, b) = sides(key, speed);
    most(a) + most(b)
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
    // The paths taken are within their deviations of these.
    let thr = thr + side_sum(key, &paths.map(|p| p.deviation));
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

/// A feature pair as the narrow phase sees it: its key, its four paths and its vertices'
/// inverse masses.
struct Pair<'a> {
    key: PairKey,
    paths: &'a Paths<'a>,
    inv_mass: [f64; 4],
}

/// The layers past `active` that `pair` needs over `[from, to]` (`last`: as in
/// [`first_within`]): the next one if the pair came within its activation distance (within
/// [`KINEMATIC_REACH`] of the layer for a pair of fixed or scripted vertices), then each
/// deeper one it came within after that, as deep as its approach may take it
/// ([`stopping_layer`]) and at least [`LOOKAHEAD_LAYERS`] more.
fn needed_layers(
    pair: &Pair<'_>,
    (from, to, last): (f64, f64, bool),
    active: u32,
    schedule: &LayerSchedule,
) -> Vec<Violation> {
    let (key, paths) = (pair.key, pair.paths);
    let mut found = Vec::new();
    let (mut after, mut deepest) = (from, active + 1 + LOOKAHEAD_LAYERS);
    let mut layer = active + 1;
    // Prescribed motion on both sides needs no layer, only to be stopped where it reaches one.
    let activation = if pair.inv_mass.iter().all(|&w| w == 0.0) {
        KINEMATIC_REACH
    } else {
        ACTIVATION
    };
    while layer <= deepest {
        let reach = activation * schedule.eta(layer);
        let Some(time) = first_within(key, paths, (after, to, last), reach) else {
            break;
        };
        let switch_on =
            first_within(key, paths, (after, time, true), EARLY_REACH * reach).unwrap_or(time);
        found.push(Violation {
            time,
            key,
            layer,
            switch_on,
        });
        if layer == active + 1 {
            deepest = deepest.max(stopping_layer(pair, time, active, schedule));
        }
        after = time;
        layer += 1;
    }
    found
}

/// The deepest layer `pair`, closing in at time `s` as recorded, may reach before the layers
/// stop it: the first `l` such that the layers `1..=l` store [`STOP_MARGIN`] times the pair's
/// kinetic energy of approach before it reaches `eta(l + 1)`, capped at [`DEEPEST_LOOKAHEAD`]
/// past `active`. The approach is the rate the distance falls at `s`; its mass is the
/// reduced mass of the two sides, each the sum of its vertices' masses (or infinite, with a
/// fixed vertex), which is never less than the one the layers act on, so the estimate errs
/// deep. A layer switched on that is not reached only ticks idle.
fn stopping_layer(pair: &Pair<'_>, s: f64, active: u32, schedule: &LayerSchedule) -> u32 {
    let (key, paths) = (pair.key, pair.paths);
    let shallow = active + 1;
    let k = paths.map(|p| p.segment_at(s));
    let (pos, vel, _) = piece(paths, &k, s);
    let d = feature_distance(key, &pos);
    let rate = closing_rate(key, &vel);
    if !(rate > 0.0 && d > 0.0) {
        return shallow;
    }
    let dt = 1e-6 * d / rate;
    let ahead = std::array::from_fn(|j| pos[j] + dt * vel[j]);
    let approach = (d - feature_distance(key, &ahead)) / dt;
    let side_inv = |w: &[f64]| {
        if w.iter().any(|&w| w <= 0.0) {
            0.0
        } else {
            1.0 / w.iter().map(|w| 1.0 / w).sum::<f64>()
        }
    };
    let (a, b) = sides(key, &pair.inv_mass);
    let inv_mass = side_inv(a) + side_inv(b);
    if !(approach > 0.0 && inv_mass > 0.0) {
        return shallow;
    }
    let kinetic = STOP_MARGIN * 0.5 * approach * approach / inv_mass;
    let stored = |l: u32, at: f64| -> f64 {
        (1..=l)
            .map(|j| schedule.energy(j, at) - schedule.energy(j, d))
            .sum()
    };
    (shallow..active + DEEPEST_LOOKAHEAD)
        .find(|&l| stored(l, schedule.eta(l + 1)) >= kinetic)
        .unwrap_or(active + DEEPEST_LOOKAHEAD)
}

/// Whether pair `key` on `paths` provably stays at least `eta` apart over `[from, to]` (see
/// the module docs); otherwise the piece that could not be cleared.
fn stays_clear(
    key: PairKey,
    paths: &Paths<'_>,
    (from, to): (f64, f64),
    eta: f64,
) -> Result<(), (f64, f64)> {
    let eta = eta + side_sum(key, &paths.map(|p| p.deviation));
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
    use crate::penalty::layers::LayerLaw;
    use crate::state::{VertexKind, VertexState};
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
                deviation: 0.0,
            })
        }
    }

    /// Samples pair `key` on `paths` densely over `[0, 1]`, or up to (not at) `found`: it is
    /// never within `thr`.
    fn clear_before(
        key: PairKey,
        paths: &Paths<'_>,
        found: Option<f64>,
        thr: f64,
    ) -> Result<(), TestCaseError> {
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
        Ok(())
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
            clear_before(key, &paths, found, thr)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The same on paths recorded by a [`History`], simplified to within its deviation of
        /// the motion: sampled on the motion itself, the pair is never within the threshold
        /// before the reported time.
        #[test]
        fn never_misses_a_pair_on_simplified_paths(
            start in prop::array::uniform4(vec3()),
            base in prop::array::uniform4(vec3()),
            jitter in prop::array::uniform4(prop::collection::vec(
                (0.0..1.0f64, vec3().prop_map(|v| 0.05 * v)), 1..200)),
            edge_edge in any::<bool>(),
            thr in 0.05..0.5f64,
        ) {
            // Each vertex drifts at up to 2 cm/s, jittered at every kick.
            let kicks: [Vec<(f64, DVec3)>; 4] = std::array::from_fn(|j| {
                jitter[j].iter().map(|&(t, dv)| (t, 2.0 * base[j] + dv)).collect()
            });
            let m = Motion::new(start, kicks);
            let truth = m.paths();
            let mut state = VertexState {
                x: start.to_vec(),
                t: vec![0.0; 4],
                v: truth.iter().map(|p| p.v[0]).collect(),
                mass: vec![1.0; 4],
                inv_mass: vec![1.0; 4],
                kind: vec![VertexKind::Free; 4],
            };
            let mut history = History::new(1e-3);
            history.begin(&state, 0.0);
            let mut order: Vec<(f64, u32, DVec3)> = (0..4u32)
                .flat_map(|j| {
                    let p = &truth[j as usize];
                    (1..p.time.len()).map(move |k| (p.time[k], j, p.v[k]))
                })
                .collect();
            order.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (t, j, v) in order {
                let i = j as usize;
                state.apply_impulse(i, t, v - state.v[i]);
                history.record(&state, &[j]);
            }
            history.seal(&state, 1.0).unwrap();
            history.select(&[0, 1, 2, 3]);
            let paths: Paths<'_> = std::array::from_fn(|j| history.path(j as u32));
            let key = if edge_edge { PairKey::EdgeEdge(0, 1) } else { PairKey::VertexTriangle(0, 0) };
            let found = first_within(key, &paths, (0.0, 1.0, true), thr);
            clear_before(key, &truth, found, thr)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// The whole broad phase (vertex, leaf and node extents, the hierarchy's traversal and
        /// the feature filter): every feature pair two of whose vertices, one on each side,
        /// come within the reach (sampled) is a candidate.
        #[test]
        fn the_broad_phase_keeps_every_feature_pair_that_comes_near(
            triangles in prop::collection::vec(
                (vec3(), prop::array::uniform3(vec3()), prop::array::uniform3((vec3(), vec3(), 0.0..1.0f64))),
                20..40,
            ),
            reach in 0.05..0.4f64,
        ) {
            // Separate triangles (more than a bucket holds, so that node pairs are tested) of
            // three own vertices each: a point in a 2 cm cube, offsets of up to 0.3 cm,
            // velocities of up to 2 cm/s, and one kick of up to 2 cm/s each.
            let mut x = Vec::new();
            let mut motion = Vec::new();
            for (centre, offsets, moves) in &triangles {
                for (offset, (v, kick, at)) in offsets.iter().zip(moves) {
                    x.push(*centre + 0.3 * *offset);
                    motion.push((2.0 * *v, 2.0 * *kick, *at));
                }
            }
            let n = x.len();
            let tris: Vec<[u32; 3]> = (0..n as u32 / 3).map(|t| [3 * t, 3 * t + 1, 3 * t + 2]).collect();
            let edges: Vec<[u32; 2]> = (tris.iter())
                .flat_map(|&[a, b, c]| [[a, b], [b, c], [a, c]])
                .collect();
            let mut state = VertexState {
                x: x.clone(),
                t: vec![0.0; n],
                v: motion.iter().map(|m| m.0).collect(),
                mass: vec![1.0; n],
                inv_mass: vec![1.0; n],
                kind: vec![VertexKind::Free; n],
            };
            let mut history = History::new(1e-3);
            history.begin(&state, 0.0);
            let mut kicks: Vec<(f64, usize)> = (0..n).map(|i| (motion[i].2, i)).collect();
            kicks.sort_by(|a, b| a.0.total_cmp(&b.0));
            for &(t, i) in &kicks {
                state.apply_impulse(i, t, motion[i].1);
                history.record(&state, &[i as u32]);
            }
            history.seal(&state, 1.0).unwrap();
            history.fit_volumes(&state);
            let mut detector = Retrospective::new(edges, tris, n);
            let mut candidates = Vec::new();
            detector.candidates(&history, reach, &mut candidates);
            let at = |i: u32, s: f64| {
                let (i, (v, kick, t)) = (i as usize, motion[i as usize]);
                x[i] + v * s + kick * (s - t).max(0.0)
            };
            let leaves = &detector.leaves;
            for a in leaves.ids() {
                for b in leaves.ids().filter(|&b| b > a) {
                    let mut near = Vec::new();
                    leaves.features(a, b, &mut |k| {
                        let v = leaves.key_vertices(k).map(VertexId::get);
                        let (p, q) = sides(k, &v);
                        let close = (0..=100).any(|j| {
                            let s = j as f64 / 100.0;
                            p.iter().any(|&i| q.iter().any(|&k| at(i, s).distance(at(k, s)) <= reach))
                        });
                        if close {
                            near.push(k);
                        }
                    });
                    for k in near {
                        prop_assert!(candidates.binary_search(&k).is_ok(), "{:?} dropped", k);
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Whenever a vertex of one side comes within twice the pad of a vertex of the other
        /// (sampled), the two sides' volumes are reported as meeting.
        #[test]
        fn the_candidate_filter_never_drops_a_pair_that_comes_near(
            start in prop::array::uniform4(vec3()),
            kicks in prop::array::uniform4(kicks()),
            split in 1..4usize,
            pad in 0.05..0.5f64,
        ) {
            let m = Motion::new(start, kicks);
            let paths = m.paths();
            let ends: Vec<Ends> = paths
                .iter()
                .map(|p| {
                    let mut times = p.time.to_vec();
                    let mut points = p.x.to_vec();
                    times.push(1.0);
                    points.push(p.at(p.time.len() - 1, 1.0));
                    Ends::of(&Dop18::fit_path(&times, &points, pad), (0.0, 1.0))
                })
                .collect();
            let (a, b): (Vec<u32>, Vec<u32>) = ((0..split as u32).collect(), (split as u32..4).collect());
            let near = (0..=2000).any(|i| {
                let s = f64::from(i) / 2000.0;
                let at = |v: u32| paths[v as usize].at(paths[v as usize].segment_at(s), s);
                a.iter().any(|&p| b.iter().any(|&q| at(p).distance(at(q)) <= 2.0 * pad))
            });
            let tol = TOLERANCE * (1.0 + Ends::magnitude(&ends));
            prop_assert!(!near || Ends::unions_meet(&ends, &a, &b, tol));
        }
    }

    /// Vertex 0 falling at `speed` onto the fixed triangle (1, 2, 3) `speed` cm below it (so
    /// that it crosses a distance `d` at `1 - d / speed`).
    fn falling_vertex(speed: f64) -> Motion {
        Motion::new(
            [DVec3::new(0.2, speed, 0.2), DVec3::ZERO, DVec3::X, DVec3::Z],
            [
                vec![(0.0, -speed * DVec3::Y)],
                vec![(0.0, DVec3::ZERO)],
                vec![(0.0, DVec3::ZERO)],
                vec![(0.0, DVec3::ZERO)],
            ],
        )
    }

    #[test]
    fn a_head_on_approach_is_found_where_it_crosses() {
        // A vertex falling at 1 cm/s onto a triangle 1 cm below it: within 0.1 at t = 0.9.
        let m = falling_vertex(1.0);
        let key = PairKey::VertexTriangle(0, 0);
        let t = first_within(key, &m.paths(), (0.0, 2.0, true), 0.1).unwrap();
        assert!((t - 0.9).abs() < 1e-6, "{t}");
        assert_eq!(first_within(key, &m.paths(), (0.0, 0.85, false), 0.1), None);
        assert!(stays_clear(key, &m.paths(), (0.0, 0.85), 0.1).is_ok());
        assert!(stays_clear(key, &m.paths(), (0.0, 1.0), 0.1).is_err());
    }

    /// `pair` of the falling vertex, free (unit mass) over a fixed triangle.
    fn over_fixed_triangle<'a>(paths: &'a Paths<'a>) -> Pair<'a> {
        Pair {
            key: PairKey::VertexTriangle(0, 0),
            paths,
            inv_mass: [1.0, 0.0, 0.0, 0.0],
        }
    }

    #[test]
    fn a_deep_approach_needs_the_next_layer_and_the_one_after_each_switched_on_early() {
        // A vertex falling at 1 cm/s onto a triangle 1 cm below it, no layer active; the thesis
        // law with eta1 = 0.1: eta(2) = 0.1 / 2^(1/4). Layers 1 and 2 store its kinetic energy
        // (0.5) before it reaches eta(3).
        let (m, key) = (falling_vertex(1.0), PairKey::VertexTriangle(0, 0));
        let paths = m.paths();
        let pair = over_fixed_triangle(&paths);
        let schedule = LayerSchedule::new(0.1, 1000.0, LayerLaw::Thesis).unwrap();
        let found = needed_layers(&pair, (0.0, 2.0, true), 0, &schedule);
        assert_eq!(found.len(), 1 + LOOKAHEAD_LAYERS as usize);
        let crossing = |d: f64| 1.0 - d;
        for (v, layer) in found.iter().zip(1..) {
            let reach = ACTIVATION * schedule.eta(layer);
            assert_eq!((v.key, v.layer), (key, layer));
            assert!((v.time - crossing(reach)).abs() < 1e-6, "{v:?}");
        }
        // Layer 1 at twice its reach; layer 2 no earlier than layer 1 was found.
        assert!((found[0].switch_on - crossing(EARLY_REACH * 0.11)).abs() < 1e-6);
        assert_eq!(found[1].switch_on, found[0].time);
        // With layer 2 already active, only layer 3 (and 4) are looked for.
        let deeper = needed_layers(&pair, (0.0, 2.0, true), 2, &schedule);
        assert_eq!(deeper[0].layer, 3);
        // A pair that stays beyond every reach needs nothing.
        let clear = needed_layers(&pair, (0.0, 0.5, false), 0, &schedule);
        assert!(clear.is_empty());
    }

    #[test]
    fn a_layer_found_needed_acts_only_where_its_pair_came_within_its_thickness() {
        // The vertex falling at 1 cm/s comes within the activation distance of layer 1
        // (0.11) at t = 0.89 and within its thickness (0.1, with the margin 0.101) at 0.899.
        let (m, key) = (falling_vertex(1.0), PairKey::VertexTriangle(0, 0));
        let paths = m.paths();
        let schedule = LayerSchedule::new(0.1, 1000.0, LayerLaw::Thesis).unwrap();
        let off = Timeline {
            start: 0,
            changes: &[],
        };
        let pair = over_fixed_triangle(&paths);
        assert!(!needed_layers(&pair, (0.0, 0.895, true), 0, &schedule).is_empty());
        assert!(!may_act(key, &paths, off, (0.0, 0.895), &schedule));
        assert!(may_act(key, &paths, off, (0.0, 0.95), &schedule));
        // Layer 1 on from t = 0.5: what matters after that is layer 2's thickness, 0.0841
        // (0.0849 with the margin), reached at 0.9151.
        let on = [LayerChange {
            key,
            time: 0.5,
            before: 0,
            after: 1,
        }];
        let switched = Timeline {
            start: 0,
            changes: &on,
        };
        assert!(!may_act(key, &paths, switched, (0.0, 0.91), &schedule));
        assert!(may_act(key, &paths, switched, (0.0, 0.95), &schedule));
    }

    #[test]
    fn a_fast_approach_needs_every_layer_down_to_where_the_layers_hold_its_energy() {
        let schedule = LayerSchedule::new(0.1, 1000.0, LayerLaw::Thesis).unwrap();
        let m = falling_vertex(10.0);
        let paths = m.paths();
        let found = needed_layers(&over_fixed_triangle(&paths), (0.0, 1.0, true), 0, &schedule);
        let deepest = found.last().expect("found").layer;
        assert_eq!(
            found.iter().map(|v| v.layer).collect::<Vec<_>>(),
            (1..=deepest).collect::<Vec<_>>()
        );
        // Layers 1..=l hold the energy of approach (0.5 * 10^2, times the margin) before eta(l + 1)
        // for l = deepest, and not for the layer above it.
        let held = |l: u32| -> f64 {
            let from = ACTIVATION * schedule.eta(1);
            (1..=l)
                .map(|j| schedule.energy(j, schedule.eta(l + 1)) - schedule.energy(j, from))
                .sum()
        };
        let kinetic = STOP_MARGIN * 0.5 * 10.0 * 10.0;
        assert!(deepest > 2 && held(deepest) >= kinetic && held(deepest - 1) < kinetic);
        // Between two fixed sides nothing is estimated: the next layer and the lookahead.
        let fixed = Pair {
            inv_mass: [0.0; 4],
            ..over_fixed_triangle(&paths)
        };
        let found = needed_layers(&fixed, (0.0, 1.0, true), 0, &schedule);
        assert_eq!(found.len(), 1 + LOOKAHEAD_LAYERS as usize);
    }
}
