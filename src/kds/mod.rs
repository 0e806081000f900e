//! Kinetic data structures (thesis §5.3, DESIGN §6).
//!
//! - `slab`: kinetic separation slabs, the narrow-phase certificate of a VT or EE pair.
//! - `swept_boxes`: the interim broad phase (swept boxes on a hash grid), kept for comparison.
//! - `kdop`: k-DOPs and spheres moving linearly in time, and their overlap intervals.
//! - `leaves`: the leaf primitives, their feature pairs and reference trajectories.
//! - `bvh`: one hierarchy over every leaf of every object.
//! - `kinetic_grid`: the kinetic Eulerian grid of thesis §7.3, an alternative broad phase.
//! - `separation_list`: the kinetic separation list over a `bvh::Bvh`.

pub(crate) mod bvh;
pub(crate) mod kdop;
mod kinetic_grid;
pub(crate) mod leaves;
mod separation_list;
pub(crate) mod slab;
mod swept_boxes;

pub(crate) use kinetic_grid::GridStats;
pub(crate) use separation_list::ListStats;

use crate::penalty::PairKey;
use kdop::{Aabb, Dop18, Dop26, Sphere};
use kinetic_grid::KineticGrid;
use leaves::Leaves;
use separation_list::SeparationList;
use swept_boxes::SweptBoxes;

use crate::mesh::TriangleList;
use crate::state::VertexState;

/// Fewest vertices or pairs per rayon task in the per-vertex and per-pair passes of the
/// separation list (checking references, fitting vertex volumes, re-timing pairs, handing over
/// feature pairs): one item costs ~50-100 ns, so smaller tasks cost more to split than they save.
const PAR_MIN_LEN: usize = 256;

/// How far (as a fraction of `eta1`) a vertex may stray from its reference trajectory before
/// the kinetic broad phases refit its leaves (the interim broad phase's slack, too), until the
/// kinetic kinds widen it (see [`WIDE_SLACK`]).
const SLACK: f64 = 0.25;

/// The kinetic kinds' wide reference slack, as a fraction of `eta1`, and at most
/// [`WIDE_SLACK_EDGE`] of the mean edge length. Vertices resting in a penalty layer are kicked
/// every few of its ticks, each kick moving them off their references, and every stray refits
/// its leaves and hands over their feature pairs again. Once some pair is in a layer and more
/// than [`STRAY_LOW`] of the leaves still stray over a horizon already at [`HORIZON_MIN`], a
/// shorter horizon cannot help, and the slack widens to this for the rest of the run. A wider
/// slack pads every volume, so more feature pairs are handed over; the edge bound keeps the
/// pad small against the features themselves (a ribbon's cross-section, a fine mesh).
const WIDE_SLACK: f64 = 1.0;

/// The wide slack's bound, as a fraction of the mean edge length at the start.
const WIDE_SLACK_EDGE: f64 = 0.05;

/// The kinetic broad phases certify over a horizon of several engine windows: references with
/// slack keep their volumes valid across whole-mesh kicks, so a longer horizon means fewer
/// rebuilds (each costs O(frontier)), but a velocity change moves a vertex's position at the
/// horizon's end further from its reference, so vertices stray (and refit their leaves) more
/// often. The horizon adapts at each rebuild: doubled when fewer than [`STRAY_LOW`] of the
/// leaves were refitted over the last one, halved above [`STRAY_HIGH`]; it starts at
/// [`HORIZON_START`] windows (fastest of 1, 2, 3, 4, 8, 16 fixed on `sheet_on_sphere`).
const HORIZON_START: f64 = 4.0;
/// Shortest horizon, in windows.
const HORIZON_MIN: f64 = 1.0;
/// Longest horizon, in windows.
const HORIZON_MAX: f64 = 256.0;
/// Refitted leaves per leaf over a horizon below which the next horizon doubles.
const STRAY_LOW: f64 = 0.05;
/// Refitted leaves per leaf over a horizon above which the next horizon halves.
const STRAY_HIGH: f64 = 0.25;

/// Which broad phase finds candidate pairs (`contact.broad_phase` in a profile).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BroadPhaseKind {
    /// Kinetic separation list over an 18-DOP hierarchy (the thesis's choice).
    #[default]
    Kdop18,
    /// The same with the thesis's lazy hand-back: open pairs collapse only at horizon rebuilds.
    Kdop18Lazy,
    /// Kinetic separation list over a 26-DOP hierarchy.
    Kdop26,
    /// Kinetic separation list over an axis-aligned box (6-DOP) hierarchy.
    Aabb,
    /// Kinetic separation list over a sphere tree.
    Spheres,
    /// The kinetic Eulerian grid (thesis §7.3).
    Grid,
    /// The interim swept boxes on a hash grid, kept for comparison.
    SweptBoxes,
}

impl BroadPhaseKind {
    /// Every kind, in the order of [`NAMES`](Self::NAMES).
    pub const ALL: [Self; 7] = [
        Self::Kdop18,
        Self::Kdop18Lazy,
        Self::Kdop26,
        Self::Aabb,
        Self::Spheres,
        Self::Grid,
        Self::SweptBoxes,
    ];

    /// The profile names of [`ALL`](Self::ALL).
    pub const NAMES: [&'static str; 7] = [
        "kdop18",
        "kdop18_lazy",
        "kdop26",
        "aabb",
        "spheres",
        "grid",
        "swept_boxes",
    ];

    /// The profile name.
    pub fn name(self) -> &'static str {
        let i = Self::ALL.iter().position(|&k| k == self).unwrap_or(0);
        Self::NAMES[i]
    }

    /// The kind named `name` in a profile, if any.
    pub fn parse(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .position(|&n| n == name)
            .map(|i| Self::ALL[i])
    }
}

/// Counters of the broad phase, for `stats.json`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct BroadPhaseStats {
    /// The broad phase's profile name.
    pub kind: &'static str,
    /// Separation-list counters (kinetic BVH kinds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list: Option<ListStats>,
    /// Grid counters (`grid`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<GridStats>,
    /// Broad-phase certificates queued now.
    pub certificates: usize,
    /// Heap bytes held by the broad phase.
    pub bytes: usize,
    /// How far (cm) a vertex may stray from its reference path now (widened where vertices in
    /// contact keep straying: `docs/contact.md`, "Candidate pairs").
    pub slack: f64,
}

/// The broad phase the contact subsystem talks to: one of [`BroadPhaseKind`], dispatched by
/// `match` (each variant is monomorphic, so the hot loops are not virtual calls).
///
/// Calls: [`rebuild`](Self::rebuild) at each horizon's end, [`update`](Self::update) after
/// velocity changes, and [`advance`](Self::advance) at [`next_time`](Self::next_time), the
/// earlier of the horizon's end and the next kinetic certificate failure. Each reports candidate
/// pairs through `found` (and the kinetic kinds pairs taken back through `lost`).
#[derive(Debug)]
pub(crate) struct BroadPhase {
    kind: BroadPhaseKind,
    inner: Inner,
    window_end: f64,
    /// The kinetic horizon, in engine windows (adaptive, see [`HORIZON_START`]).
    horizon: f64,
    /// Leaf refits counted at the last rebuild.
    refits_seen: u64,
    /// The kinetic kinds' reference slack (cm): [`SLACK`] `eta1` until widened.
    slack: f64,
    /// The wide slack (cm; see [`WIDE_SLACK`]), no narrower than the first.
    wide_slack: f64,
}

#[derive(Debug)]
enum Inner {
    Swept(SweptBoxes),
    Aabb(SeparationList<Aabb>),
    Dop18(SeparationList<Dop18>),
    Dop26(SeparationList<Dop26>),
    Spheres(SeparationList<Sphere>),
    Grid(KineticGrid),
}

/// Runs `$body` with `$l` bound to the separation list or grid of a kinetic variant, or `$swept`
/// with `$s` bound to the swept boxes.
macro_rules! dispatch {
    ($inner:expr, $l:ident => $body:expr, $s:ident => $swept:expr) => {
        match $inner {
            Inner::Swept($s) => $swept,
            Inner::Aabb($l) => $body,
            Inner::Dop18($l) => $body,
            Inner::Dop26($l) => $body,
            Inner::Spheres($l) => $body,
            Inner::Grid($l) => $body,
        }
    };
}

/// [`WIDE_SLACK`] `eta1`, at most [`WIDE_SLACK_EDGE`] times the mean length of `edges` in
/// `state` (0 without edges).
fn wide_slack(edges: &[[u32; 2]], state: &VertexState, eta1: f64) -> f64 {
    if edges.is_empty() {
        return 0.0;
    }
    let total: f64 = (edges.iter())
        .map(|&[a, b]| (state.x[a as usize] - state.x[b as usize]).length())
        .sum();
    let mean = total / edges.len() as f64;
    (WIDE_SLACK * eta1).min(WIDE_SLACK_EDGE * mean)
}

impl BroadPhase {
    /// A broad phase of kind `kind` over these primitives of the vertices in `state`; `eta1` is
    /// the first penalty layer's thickness.
    pub(crate) fn new(
        kind: BroadPhaseKind,
        edges: Vec<[u32; 2]>,
        triangles: TriangleList,
        state: &VertexState,
        eta1: f64,
    ) -> Self {
        let n = state.len();
        let slack = SLACK * eta1;
        let wide_slack = wide_slack(&edges, state, eta1).max(slack);
        let inner = match kind {
            BroadPhaseKind::SweptBoxes => Inner::Swept(SweptBoxes::new(edges, triangles, n, eta1)),
            BroadPhaseKind::Aabb => Inner::Aabb(SeparationList::new(
                Leaves::new(edges, triangles, n),
                state,
                eta1,
                slack,
                true,
            )),
            BroadPhaseKind::Kdop18 => Inner::Dop18(SeparationList::new(
                Leaves::new(edges, triangles, n),
                state,
                eta1,
                slack,
                true,
            )),
            BroadPhaseKind::Kdop18Lazy => Inner::Dop18(SeparationList::new(
                Leaves::new(edges, triangles, n),
                state,
                eta1,
                slack,
                false,
            )),
            BroadPhaseKind::Kdop26 => Inner::Dop26(SeparationList::new(
                Leaves::new(edges, triangles, n),
                state,
                eta1,
                slack,
                true,
            )),
            BroadPhaseKind::Spheres => Inner::Spheres(SeparationList::new(
                Leaves::new(edges, triangles, n),
                state,
                eta1,
                slack,
                true,
            )),
            BroadPhaseKind::Grid => Inner::Grid(KineticGrid::new(
                Leaves::new(edges, triangles, n),
                state,
                eta1,
                slack,
            )),
        };
        Self {
            kind,
            inner,
            window_end: 0.0,
            horizon: HORIZON_START,
            refits_seen: 0,
            slack,
            wide_slack,
        }
    }

    /// Turns adaptive k-DOP axis ordering on or off (`speed.axis_ordering`): the kinetic
    /// separation lists try the axis that separated last first. It changes only the cost of
    /// their tests, never an answer.
    pub(crate) fn set_adaptive_axes(&mut self, on: bool) {
        match &mut self.inner {
            Inner::Aabb(l) => l.set_adaptive_axes(on),
            Inner::Dop18(l) => l.set_adaptive_axes(on),
            Inner::Dop26(l) => l.set_adaptive_axes(on),
            Inner::Spheres(l) => l.set_adaptive_axes(on),
            Inner::Swept(_) | Inner::Grid(_) => {}
        }
    }

    /// The end of the current horizon (window).
    pub(crate) fn window_end(&self) -> f64 {
        self.window_end
    }

    /// Global edge list.
    pub(crate) fn edges(&self) -> &[[u32; 2]] {
        dispatch!(&self.inner, l => l.leaves().edge_list(), s => s.edges())
    }

    /// Global triangle list.
    pub(crate) fn triangles(&self) -> &[[u32; 3]] {
        dispatch!(&self.inner, l => l.leaves().triangle_list(), s => s.triangles())
    }

    /// Starts a new horizon `[t, window_end]`; `in_contact`: whether some pair is inside a
    /// penalty layer now (see [`WIDE_SLACK`]).
    pub(crate) fn rebuild(
        &mut self,
        state: &VertexState,
        t: f64,
        window_end: f64,
        in_contact: bool,
        found: &mut impl FnMut(PairKey),
    ) {
        let (refits, leaves) = dispatch!(&self.inner,
            l => (l.leaf_refits(), l.leaves().len().max(1)),
            _s => (0, 1));
        if self.window_end > 0.0 {
            let strays = (refits - self.refits_seen) as f64 / leaves as f64;
            if strays < STRAY_LOW {
                self.horizon = (2.0 * self.horizon).min(HORIZON_MAX);
            } else if in_contact && self.horizon <= HORIZON_MIN {
                self.slack = self.wide_slack;
            } else if strays > STRAY_HIGH {
                self.horizon = (0.5 * self.horizon).max(HORIZON_MIN);
            }
        }
        self.refits_seen = refits;
        let kinetic_end = t + self.horizon * (window_end - t);
        self.window_end = match self.inner {
            Inner::Swept(_) => window_end,
            _ => kinetic_end,
        };
        let slack = self.slack;
        dispatch!(&mut self.inner,
            l => l.rebuild(state, t, kinetic_end, slack, found),
            s => s.rebuild(state, t, window_end, found))
    }

    /// After the velocities of `vertices` changed at `t`.
    pub(crate) fn update(
        &mut self,
        state: &VertexState,
        t: f64,
        vertices: &[u32],
        found: &mut impl FnMut(PairKey),
    ) {
        dispatch!(&mut self.inner,
            l => l.update(state, t, vertices, found),
            s => s.update(state, t, vertices, found))
    }

    /// At an all-vertex event at `t`: the kinetic separation lists compute no certificate past
    /// `stop`, the next all-vertex event, and re-time the pairs they cut short at this one
    /// ([`SeparationList::short_circuit`]; `speed.short_circuit`). Other kinds ignore it.
    pub(crate) fn short_circuit(&mut self, t: f64, stop: f64) {
        match &mut self.inner {
            Inner::Aabb(l) => l.short_circuit(t, stop),
            Inner::Dop18(l) => l.short_circuit(t, stop),
            Inner::Dop26(l) => l.short_circuit(t, stop),
            Inner::Spheres(l) => l.short_circuit(t, stop),
            Inner::Swept(_) | Inner::Grid(_) => {}
        }
    }

    /// When the broad phase next needs [`advance`](Self::advance) (or, at the horizon's end,
    /// [`rebuild`](Self::rebuild)).
    pub(crate) fn next_time(&self) -> f64 {
        let next = dispatch!(&self.inner, l => l.next_failure_time(), _s => f64::INFINITY);
        next.min(self.window_end)
    }

    /// Processes the kinetic certificates due at `t`.
    pub(crate) fn advance(
        &mut self,
        t: f64,
        found: &mut impl FnMut(PairKey),
        lost: &mut impl FnMut(PairKey),
    ) {
        dispatch!(&mut self.inner, l => l.advance(t, found, lost), _s => ())
    }

    /// Whether the broad phase still holds `pair` as a candidate (its leaves' volumes overlap).
    pub(crate) fn overlaps(&self, pair: PairKey) -> bool {
        dispatch!(&self.inner, l => l.overlaps(pair), s => s.overlaps(pair))
    }

    /// The broad phase's invariants at `t` (for `--audit`).
    pub(crate) fn audit(&self, state: &VertexState, t: f64) -> Result<(), String> {
        dispatch!(&self.inner, l => l.audit(state, t), s => s.audit(state, t))
    }

    /// Counters, certificates alive and memory.
    pub(crate) fn stats(&self) -> BroadPhaseStats {
        let mut out = BroadPhaseStats {
            kind: self.kind.name(),
            slack: self.slack,
            ..BroadPhaseStats::default()
        };
        match &self.inner {
            Inner::Swept(_) => {}
            Inner::Aabb(l) => out.fill_list(l),
            Inner::Dop18(l) => out.fill_list(l),
            Inner::Dop26(l) => out.fill_list(l),
            Inner::Spheres(l) => out.fill_list(l),
            Inner::Grid(g) => {
                out.grid = Some(g.stats().clone());
                out.certificates = g.certificates();
                out.bytes = g.bytes();
            }
        }
        out
    }
}

impl BroadPhaseStats {
    fn fill_list<V: kdop::Volume>(&mut self, l: &SeparationList<V>) {
        self.list = Some(l.stats());
        self.certificates = l.certificates();
        self.bytes = l.bytes();
    }
}
