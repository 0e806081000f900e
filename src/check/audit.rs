//! Whole-configuration intersection audit.
//!
//! For one configuration (positions + triangles) the audit visits every pair of triangles that
//! share no vertex index and whose bounding boxes come within `cutoff` of each other:
//!
//! 1. **Broad phase** (exact for intersections): a uniform grid over the bounding boxes inflated by
//!    `cutoff / 2`. Cell indices come from a monotone map of the coordinates, so two closed boxes
//!    that overlap always share the cell that holds the maximum of their lower corners; each pair
//!    is examined only in that cell (no duplicates, no hash set). Boxes spanning very many cells go
//!    to a separate list checked against everything.
//! 2. **Narrow phase**: pairs whose raw boxes overlap get the exact [`triangles_intersect`] test;
//!    non-intersecting pairs get the floating-point measure of
//!    [`triangle_distance`](super::distance::triangle_distance), and distances `<= cutoff` feed
//!    the minimum (pairs whose boxes are already farther apart than that are skipped).
//!
//! The result is reduced with sums, minima and the lexicographically smallest bad pair, so it is
//! identical for every thread count.

use super::distance::separated_triangle_distance;
use super::intersection::triangles_intersect;
use crate::profiling::zone;
use glam::DVec3;
use rayon::prelude::*;
use serde::Serialize;

/// Result of auditing one configuration (or a sequence of frames).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditReport {
    /// Number of configurations (frames) audited into this report.
    pub frames: u64,
    /// Number of intersecting pairs of triangles that share no vertex, summed over frames.
    pub intersecting_pairs: u64,
    /// Minimum distance over audited non-adjacent pairs within the cutoff (`0.0` when some pair
    /// intersects); `f64::INFINITY` if there is no such pair.
    pub min_distance: f64,
    /// The earliest frame's lexicographically smallest intersecting pair, if any.
    pub first_bad: Option<BadPair>,
}

/// One intersecting pair of triangles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct BadPair {
    /// Frame in which the pair intersects.
    pub frame: u64,
    /// The two triangle indices, smaller first.
    pub triangles: [u32; 2],
}

/// Why a configuration could not be audited.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    /// A vertex position has a NaN or infinite coordinate.
    #[error("frame {frame}: vertex {vertex} has a non-finite position")]
    NonFinite {
        /// Frame being audited.
        frame: u64,
        /// Index of the first non-finite vertex.
        vertex: usize,
    },
    /// A triangle refers to a vertex that does not exist.
    #[error("frame {frame}: triangle {triangle} refers to vertex {vertex}, but there are only {vertices} vertices")]
    BadIndex {
        /// Frame being audited.
        frame: u64,
        /// Index of the first offending triangle.
        triangle: usize,
        /// The vertex index it refers to.
        vertex: u32,
        /// Number of vertices in the configuration.
        vertices: usize,
    },
    /// More triangles than a `u32` triangle index can name.
    #[error("frame {frame}: {triangles} triangles exceed the u32 index range")]
    TooManyTriangles {
        /// Frame being audited.
        frame: u64,
        /// Number of triangles given.
        triangles: usize,
    },
}

impl Default for AuditReport {
    fn default() -> Self {
        Self::new()
    }
}

impl AuditReport {
    /// An empty report: no frames, no pairs, infinite minimum distance.
    pub fn new() -> Self {
        AuditReport {
            frames: 0,
            intersecting_pairs: 0,
            min_distance: f64::INFINITY,
            first_bad: None,
        }
    }

    #[cfg(test)]
    /// `true` when no audited pair intersects.
    pub(crate) fn is_clean(&self) -> bool {
        self.intersecting_pairs == 0
    }

    /// Folds `other` into `self` (frames and pairs add up, minimum distance and first bad pair
    /// take the minimum). The result does not depend on the order of merging.
    pub(crate) fn merge(&mut self, other: &AuditReport) {
        self.frames += other.frames;
        self.intersecting_pairs += other.intersecting_pairs;
        self.min_distance = self.min_distance.min(other.min_distance);
        self.first_bad = min_bad(self.first_bad, other.first_bad);
    }
}

fn min_bad<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Audits one configuration into `report`: every pair of triangles that share no vertex;
/// pairs farther apart than `cutoff` (by bounding boxes) are skipped for the distance
/// (intersection needs overlap of boxes anyway).
///
/// Intersections are decided exactly and never missed. A negative or NaN `cutoff` counts as 0.
/// On error (non-finite positions, bad indices) `report` is left unchanged.
pub fn audit_positions(
    positions: &[DVec3],
    triangles: &[[u32; 3]],
    cutoff: f64,
    frame: u64,
    report: &mut AuditReport,
) -> Result<(), AuditError> {
    if let Some(vertex) = positions.iter().position(|p| !p.is_finite()) {
        return Err(AuditError::NonFinite { frame, vertex });
    }
    if u32::try_from(triangles.len()).is_err() {
        return Err(AuditError::TooManyTriangles {
            frame,
            triangles: triangles.len(),
        });
    }
    for (triangle, t) in triangles.iter().enumerate() {
        if let Some(&vertex) = t.iter().find(|&&v| v as usize >= positions.len()) {
            return Err(AuditError::BadIndex {
                frame,
                triangle,
                vertex,
                vertices: positions.len(),
            });
        }
    }
    let cutoff = if cutoff >= 0.0 { cutoff } else { 0.0 };
    let acc = audit_core(positions, triangles, cutoff);
    report.merge(&AuditReport {
        frames: 1,
        intersecting_pairs: acc.pairs,
        min_distance: acc.min_distance,
        first_bad: acc.first_bad.map(|triangles| BadPair { frame, triangles }),
    });
    Ok(())
}

/// Audits one configuration into a fresh report (see [`audit_positions`]).
pub fn audit_frame(
    positions: &[DVec3],
    triangles: &[[u32; 3]],
    cutoff: f64,
    frame: u64,
) -> Result<AuditReport, AuditError> {
    let mut report = AuditReport::new();
    audit_positions(positions, triangles, cutoff, frame, &mut report)?;
    Ok(report)
}

#[cfg(test)]
/// Audits a sequence of configurations of one mesh, numbering frames from 0; stops at the first
/// error.
pub(crate) fn audit_sequence<'a, I>(
    frames: I,
    triangles: &[[u32; 3]],
    cutoff: f64,
) -> Result<AuditReport, AuditError>
where
    I: IntoIterator<Item = &'a [DVec3]>,
{
    let mut report = AuditReport::new();
    for (frame, positions) in frames.into_iter().enumerate() {
        audit_positions(positions, triangles, cutoff, frame as u64, &mut report)?;
    }
    Ok(report)
}

/// Per-frame partial result; combined with sums and minima only.
#[derive(Clone, Copy, Debug)]
struct Acc {
    pairs: u64,
    min_distance: f64,
    first_bad: Option<[u32; 2]>,
}

impl Acc {
    const EMPTY: Acc = Acc {
        pairs: 0,
        min_distance: f64::INFINITY,
        first_bad: None,
    };

    fn join(self, o: Acc) -> Acc {
        Acc {
            pairs: self.pairs + o.pairs,
            min_distance: self.min_distance.min(o.min_distance),
            first_bad: min_bad(self.first_bad, o.first_bad),
        }
    }
}

/// Axis-aligned box.
#[derive(Clone, Copy, Debug)]
struct Aabb {
    lo: DVec3,
    hi: DVec3,
}

impl Aabb {
    fn overlaps(&self, o: &Aabb) -> bool {
        self.lo.cmple(o.hi).all() && o.lo.cmple(self.hi).all()
    }
}

/// Boxes spanning more cells than this are checked against every triangle instead.
const MAX_CELLS_PER_BOX: u64 = 64;
/// Grid resolution limit per axis (cell coordinates are packed in 21 bits).
const MAX_DIM: u64 = 1 << 20;
/// Fewest triangles a rayon task fits boxes to or lists the cells of.
const BOX_TASK: usize = 1024;

struct Ctx<'a> {
    positions: &'a [DVec3],
    triangles: &'a [[u32; 3]],
    raw: Vec<Aabb>,
    inflated: Vec<Aabb>,
    cutoff: f64,
}

impl Ctx<'_> {
    fn tri(&self, i: usize) -> [DVec3; 3] {
        self.triangles[i].map(|v| self.positions[v as usize])
    }

    fn adjacent(&self, i: usize, j: usize) -> bool {
        let (a, b) = (self.triangles[i], self.triangles[j]);
        a.iter().any(|v| b.contains(v))
    }

    /// Narrow phase for a candidate pair `i < j` of non-adjacent triangles. The distance is only
    /// computed when the boxes come within `bound` (the cutoff or a smaller minimum already found
    /// in the same sequential run, so the result never depends on the thread count).
    fn pair(&self, i: usize, j: usize, bound: f64) -> Acc {
        let (bi, bj) = (&self.raw[i], &self.raw[j]);
        let (a, b) = (self.tri(i), self.tri(j));
        if bi.overlaps(bj) && triangles_intersect(a, b) {
            return Acc {
                pairs: 1,
                min_distance: 0.0,
                first_bad: Some([i as u32, j as u32]),
            };
        }
        // The boxes' distance is a lower bound for the triangles' distance (with a margin for
        // rounding in both computations).
        let gap = (bi.lo - bj.hi).max(bj.lo - bi.hi).max(DVec3::ZERO);
        if gap.length() > bound * (1.0 + 1e-9) {
            return Acc::EMPTY;
        }
        let d = separated_triangle_distance(a, b);
        Acc {
            pairs: 0,
            min_distance: if d <= self.cutoff { d } else { f64::INFINITY },
            first_bad: None,
        }
    }

    fn bound(&self, acc: &Acc) -> f64 {
        acc.min_distance.min(self.cutoff)
    }
}

struct Grid {
    origin: DVec3,
    cell: f64,
    dims: [u64; 3],
}

impl Grid {
    /// Monotone (non-decreasing) map from a coordinate to a cell index along `axis`.
    fn index(&self, x: f64, axis: usize) -> u64 {
        // Truncation is the floor where it is positive (and `floor` is a C library call on
        // the baseline x86-64 target); a NaN fails the test.
        let f = (x - self.origin[axis]) / self.cell;
        if f > 0.0 {
            (f as u64).min(self.dims[axis] - 1)
        } else {
            0
        }
    }

    fn range(&self, b: &Aabb) -> [(u64, u64); 3] {
        [0, 1, 2].map(|k| (self.index(b.lo[k], k), self.index(b.hi[k], k)))
    }
}

fn key(c: [u64; 3]) -> u64 {
    c[0] | (c[1] << 21) | (c[2] << 42)
}

/// The keys of the cells of the range `r`.
fn cell_keys(r: [(u64, u64); 3]) -> impl Iterator<Item = u64> {
    (r[0].0..=r[0].1).flat_map(move |x| {
        (r[1].0..=r[1].1).flat_map(move |y| (r[2].0..=r[2].1).map(move |z| key([x, y, z])))
    })
}

fn audit_core(positions: &[DVec3], triangles: &[[u32; 3]], cutoff: f64) -> Acc {
    if triangles.len() < 2 {
        return Acc::EMPTY;
    }
    let raw = triangle_boxes(positions, triangles);
    let scene = raw.iter().fold(raw[0], |s, b| Aabb {
        lo: s.lo.min(b.lo),
        hi: s.hi.max(b.hi),
    });
    // No pair is farther apart than the scene's diagonal: a larger cutoff changes nothing.
    let diag = (scene.hi - scene.lo).length();
    let half = cutoff.min(2.0 * diag) * 0.5;
    let inflated: Vec<Aabb> = raw
        .par_iter()
        .with_min_len(BOX_TASK)
        .map_init(
            || zone!("audit_task"),
            |_, b| Aabb {
                lo: b.lo - DVec3::splat(half),
                hi: b.hi + DVec3::splat(half),
            },
        )
        .collect();
    let ctx = Ctx {
        positions,
        triangles,
        raw,
        inflated,
        cutoff,
    };
    let Some(grid) = audit_grid(&ctx.inflated, scene, half) else {
        // Astronomically large coordinates: one cell holding everything is still exact.
        return brute_force(&ctx);
    };
    let ranges: Vec<[(u64, u64); 3]> = (ctx.inflated.par_iter().with_min_len(BOX_TASK))
        .map_init(|| zone!("audit_task"), |_, b| grid.range(b))
        .collect();
    let cells = CellLists::build(&ranges);
    pairs_in_cells(&ctx, &cells, &ranges).join(pairs_with_big_boxes(&ctx, &cells.big))
}

/// Each triangle's bounding box.
fn triangle_boxes(positions: &[DVec3], triangles: &[[u32; 3]]) -> Vec<Aabb> {
    triangles
        .par_iter()
        .with_min_len(BOX_TASK)
        .map_init(
            || zone!("audit_task"),
            |_, t| {
                let [a, b, c] = t.map(|v| positions[v as usize]);
                Aabb {
                    lo: a.min(b).min(c),
                    hi: a.max(b).max(c),
                }
            },
        )
        .collect()
}

/// The uniform grid over the inflated boxes: cells the mean box size, or coarser where the
/// scene would need more than `MAX_DIM` cells a side; `None` where the extent is not finite.
fn audit_grid(inflated: &[Aabb], scene: Aabb, half: f64) -> Option<Grid> {
    let lo = scene.lo - DVec3::splat(half);
    let extent = (scene.hi + DVec3::splat(half)) - lo;
    let mean_size = inflated
        .iter()
        .map(|b| (b.hi - b.lo).max_element())
        .sum::<f64>()
        / inflated.len() as f64;
    let mut cell = mean_size.max(extent.max_element() / (MAX_DIM - 1) as f64);
    if cell.is_nan() || cell <= 0.0 {
        cell = 1.0;
    }
    if !extent.is_finite() || !cell.is_finite() {
        return None;
    }
    Some(Grid {
        origin: lo,
        cell,
        dims: [0, 1, 2].map(|k| ((extent[k] / cell) as u64 + 1).clamp(1, MAX_DIM)),
    })
}

/// The boxes listed by grid cell: `(cell key, box)` entries sorted, the runs of entries that
/// share a cell and hold two boxes or more, and the boxes too big to list (over
/// `MAX_CELLS_PER_BOX` cells), which are tested against every box instead.
struct CellLists {
    entries: Vec<(u64, u32)>,
    groups: Vec<(usize, usize)>,
    big: Vec<usize>,
}

impl CellLists {
    fn build(ranges: &[[(u64, u64); 3]]) -> Self {
        let big: Vec<usize> = (ranges.iter().enumerate())
            .filter_map(|(i, r)| (cell_span(r) > MAX_CELLS_PER_BOX).then_some(i))
            .collect();
        // Each box's cells, listed in parallel: the sort below fixes their order.
        let mut entries: Vec<(u64, u32)> = (ranges.par_iter().enumerate())
            .with_min_len(BOX_TASK)
            .map_init(
                || zone!("audit_task"),
                |_, (i, r)| {
                    let listed = cell_span(r) <= MAX_CELLS_PER_BOX;
                    let cells = listed.then(|| cell_keys(*r)).into_iter().flatten();
                    cells.map(move |k| (k, i as u32))
                },
            )
            .flatten_iter()
            .collect();
        entries.par_sort_unstable();
        let mut groups = Vec::new();
        let mut start = 0;
        for e in 1..=entries.len() {
            if e == entries.len() || entries[e].0 != entries[start].0 {
                if e - start > 1 {
                    groups.push((start, e));
                }
                start = e;
            }
        }
        Self {
            entries,
            groups,
            big,
        }
    }
}

/// How many grid cells a box's cell range covers.
fn cell_span(r: &[(u64, u64); 3]) -> u64 {
    r.iter().map(|&(a, b)| b - a + 1).product::<u64>()
}

/// The closest pairs among boxes that share a cell, each pair visited in one cell only.
fn pairs_in_cells(ctx: &Ctx, cells: &CellLists, ranges: &[[(u64, u64); 3]]) -> Acc {
    let entries = &cells.entries;
    cells
        .groups
        .par_iter()
        .map_init(
            || zone!("audit_task"),
            |_, &(s, e)| {
                let cell_key = entries[s].0;
                let mut acc = Acc::EMPTY;
                for a in s..e {
                    let i = entries[a].1 as usize;
                    for &(_, j) in &entries[a + 1..e] {
                        let j = j as usize; // entries are sorted, so i < j
                        let (bi, bj) = (&ctx.inflated[i], &ctx.inflated[j]);
                        if !bi.overlaps(bj) || ctx.adjacent(i, j) {
                            continue;
                        }
                        // Visit the pair only in the cell holding the max of the lower corners
                        // (the index is monotone: the max of the corners' indices).
                        let (ri, rj) = (&ranges[i], &ranges[j]);
                        let owner = key([0, 1, 2].map(|k| ri[k].0.max(rj[k].0)));
                        if owner == cell_key {
                            acc = acc.join(ctx.pair(i, j, ctx.bound(&acc)));
                        }
                    }
                }
                acc
            },
        )
        .reduce(|| Acc::EMPTY, Acc::join)
}

/// The closest pairs that involve a box too big to list by cell, tested against every box.
fn pairs_with_big_boxes(ctx: &Ctx, big: &[usize]) -> Acc {
    let mut is_big = vec![false; ctx.inflated.len()];
    for &i in big {
        is_big[i] = true;
    }
    big.par_iter()
        .map_init(
            || zone!("audit_task"),
            |_, &i| {
                let mut acc = Acc::EMPTY;
                for (j, &j_big) in is_big.iter().enumerate() {
                    // Big-big pairs are visited once, from the smaller index.
                    if j == i || (j_big && j < i) {
                        continue;
                    }
                    if ctx.inflated[i].overlaps(&ctx.inflated[j]) && !ctx.adjacent(i, j) {
                        acc = acc.join(ctx.pair(i.min(j), i.max(j), ctx.bound(&acc)));
                    }
                }
                acc
            },
        )
        .reduce(|| Acc::EMPTY, Acc::join)
}

/// All pairs; used only when the grid cannot be built.
fn brute_force(ctx: &Ctx<'_>) -> Acc {
    let n = ctx.triangles.len();
    (0..n)
        .into_par_iter()
        .map_init(
            || zone!("audit_task"),
            |_, i| {
                let mut acc = Acc::EMPTY;
                for j in i + 1..n {
                    if ctx.inflated[i].overlaps(&ctx.inflated[j]) && !ctx.adjacent(i, j) {
                        acc = acc.join(ctx.pair(i, j, ctx.bound(&acc)));
                    }
                }
                acc
            },
        )
        .reduce(|| Acc::EMPTY, Acc::join)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::distance::triangle_distance;

    /// A sheet of `n x m` vertices (spacing `h`, `n` even) folded over itself: columns
    /// `0..n/2` lie in the plane y = 0, the rest come back at height `gap`; the two middle
    /// columns share their x, joined by a vertical strip of triangles.
    fn folded_sheet(n: usize, m: usize, h: f64, gap: f64) -> (Vec<DVec3>, Vec<[u32; 3]>) {
        let mut pos = Vec::with_capacity(n * m);
        for i in 0..n {
            for j in 0..m {
                let (x, y) = if i < n / 2 {
                    (i as f64 * h, 0.0)
                } else {
                    ((n - 1 - i) as f64 * h, gap)
                };
                pos.push(DVec3::new(x, y, j as f64 * h));
            }
        }
        let id = |i: usize, j: usize| (i * m + j) as u32;
        let mut tris = Vec::new();
        for i in 0..n - 1 {
            for j in 0..m - 1 {
                tris.push([id(i, j), id(i + 1, j), id(i + 1, j + 1)]);
                tris.push([id(i, j), id(i + 1, j + 1), id(i, j + 1)]);
            }
        }
        (pos, tris)
    }

    /// Independent all-pairs reference.
    fn brute(pos: &[DVec3], tris: &[[u32; 3]], cutoff: f64) -> (u64, f64, Option<[u32; 2]>) {
        let (mut pairs, mut min, mut first) = (0, f64::INFINITY, None);
        for i in 0..tris.len() {
            for j in i + 1..tris.len() {
                if tris[i].iter().any(|v| tris[j].contains(v)) {
                    continue;
                }
                let (a, b) = (
                    tris[i].map(|v| pos[v as usize]),
                    tris[j].map(|v| pos[v as usize]),
                );
                if triangles_intersect(a, b) {
                    pairs += 1;
                    first = first.or(Some([i as u32, j as u32]));
                }
                let d = triangle_distance(a, b);
                if d <= cutoff {
                    min = min.min(d);
                }
            }
        }
        (pairs, min, first)
    }

    fn with_threads<T: Send>(k: usize, f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new()
            .num_threads(k)
            .build()
            .unwrap()
            .install(f)
    }

    #[test]
    fn clean_fold_has_no_pairs_and_right_min_distance() {
        let (pos, tris) = folded_sheet(10, 8, 0.25, 0.125);
        let report = audit_frame(&pos, &tris, 0.5, 0).unwrap();
        let (pairs, min, _) = brute(&pos, &tris, 0.5);
        assert_eq!(pairs, 0);
        assert_eq!(report.intersecting_pairs, 0);
        assert!(report.is_clean());
        assert_eq!(report.first_bad, None);
        assert_eq!(report.frames, 1);
        assert_eq!(report.min_distance, min);
        // Near the crease the diagonal of a strip triangle and a bottom-layer diagonal are skew
        // lines closer than the layer gap: gap * h / sqrt(2 gap^2 + h^2).
        let (g, h) = (0.125f64, 0.25f64);
        let expected = g * h / (2.0 * g * g + h * h).sqrt();
        assert!(expected < g);
        assert!((report.min_distance - expected).abs() < 1e-15, "{report:?}");
        // Away from the crease the layers are exactly `gap` apart; a cutoff below every
        // distance leaves nothing.
        let none = audit_frame(&pos, &tris, 0.05, 0).unwrap();
        assert_eq!(none.min_distance, f64::INFINITY);
    }

    #[test]
    fn two_parallel_sheets_min_distance_is_the_gap() {
        let (mut pos, mut tris) = (Vec::new(), Vec::new());
        for layer in 0..2 {
            let base = pos.len() as u32;
            for i in 0..5 {
                for j in 0..5 {
                    pos.push(DVec3::new(
                        i as f64 * 0.25,
                        layer as f64 * 0.125,
                        j as f64 * 0.25,
                    ));
                }
            }
            for i in 0..4u32 {
                for j in 0..4u32 {
                    let id = |a: u32, b: u32| base + a * 5 + b;
                    tris.push([id(i, j), id(i + 1, j), id(i + 1, j + 1)]);
                    tris.push([id(i, j), id(i + 1, j + 1), id(i, j + 1)]);
                }
            }
        }
        let report = audit_frame(&pos, &tris, 1.0, 3).unwrap();
        assert_eq!(report.intersecting_pairs, 0);
        assert_eq!(report.min_distance, 0.125);
    }

    #[test]
    fn vertex_pushed_through_the_other_layer_is_found() {
        let (mut pos, tris) = folded_sheet(10, 8, 0.25, 0.125);
        // A top-layer vertex well inside (column 7, row 4) pushed below the bottom layer.
        let moved = 7 * 8 + 4;
        assert_eq!(pos[moved].y, 0.125);
        pos[moved].y = -0.125;
        let (pairs, min, first) = brute(&pos, &tris, 0.5);
        assert!(pairs >= 1);
        let report = audit_frame(&pos, &tris, 0.5, 17).unwrap();
        assert_eq!(report.intersecting_pairs, pairs);
        assert_eq!(report.min_distance, 0.0);
        assert_eq!(min, 0.0);
        let bad = report.first_bad.unwrap();
        assert_eq!(bad.frame, 17);
        assert_eq!(Some(bad.triangles), first);
        // The smaller index is a bottom-layer triangle, the larger one touches the moved vertex.
        assert!(tris[bad.triangles[1] as usize].contains(&(moved as u32)));
        assert!(tris[bad.triangles[0] as usize]
            .iter()
            .all(|&v| pos[v as usize].y == 0.0));
    }

    #[test]
    fn report_is_identical_for_any_thread_count() {
        let (mut pos, tris) = folded_sheet(16, 12, 0.25, 0.125);
        pos[11 * 12 + 5].y = -0.2;
        pos[12 * 12 + 7].y = -0.01;
        let one = with_threads(1, || audit_frame(&pos, &tris, 0.3, 2).unwrap());
        let four = with_threads(4, || audit_frame(&pos, &tris, 0.3, 2).unwrap());
        assert_eq!(one, four);
        assert!(one.intersecting_pairs >= 2);
        let (pairs, min, first) = brute(&pos, &tris, 0.3);
        assert_eq!(
            (
                one.intersecting_pairs,
                one.min_distance,
                one.first_bad.map(|b| b.triangles)
            ),
            (pairs, min, first)
        );
    }

    #[test]
    fn huge_triangles_and_unbounded_cutoff_match_brute_force() {
        let (mut pos, mut tris) = folded_sheet(8, 6, 0.25, 0.125);
        // A large triangle slicing through both layers (exceeds the per-box cell limit), and a
        // second one crossing it far away.
        let b = pos.len() as u32;
        pos.extend([
            DVec3::new(-10.0, -1.0, 0.6),
            DVec3::new(10.0, -1.0, 0.6),
            DVec3::new(0.0, 5.0, 0.65),
            DVec3::new(0.0, 0.0, -20.0),
            DVec3::new(0.0, 0.0, 20.0),
            DVec3::new(0.1, 3.0, 0.0),
        ]);
        tris.push([b, b + 1, b + 2]);
        tris.push([b + 3, b + 4, b + 5]);
        for cutoff in [0.0, 0.3, f64::INFINITY, f64::NAN, -1.0] {
            let report = audit_frame(&pos, &tris, cutoff, 0).unwrap();
            let c = if cutoff >= 0.0 { cutoff } else { 0.0 };
            let (pairs, min, first) = brute(&pos, &tris, c);
            assert!(pairs > 2);
            assert_eq!(report.intersecting_pairs, pairs, "cutoff {cutoff}");
            assert_eq!(report.min_distance, min, "cutoff {cutoff}");
            assert_eq!(report.first_bad.map(|b| b.triangles), first);
        }
    }

    #[test]
    fn frames_merge_to_the_earliest_bad_pair() {
        let (clean, tris) = folded_sheet(10, 8, 0.25, 0.125);
        let mut bad1 = clean.clone();
        bad1[7 * 8 + 4].y = -0.125;
        let mut bad2 = clean.clone();
        bad2[6 * 8 + 2].y = -0.125;
        let frames: Vec<&[DVec3]> = vec![&clean, &bad1, &bad2, &clean];
        let report = audit_sequence(frames, &tris, 0.5).unwrap();
        assert_eq!(report.frames, 4);
        let b1 = audit_frame(&bad1, &tris, 0.5, 1).unwrap();
        let b2 = audit_frame(&bad2, &tris, 0.5, 2).unwrap();
        assert_eq!(
            report.intersecting_pairs,
            b1.intersecting_pairs + b2.intersecting_pairs
        );
        assert_eq!(report.first_bad, b1.first_bad);
        assert_eq!(report.first_bad.unwrap().frame, 1);
        // Merging in the other order gives the same report.
        let mut rev = b2.clone();
        rev.merge(&b1);
        let mut fwd = b1;
        fwd.merge(&b2);
        assert_eq!(rev, fwd);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let (mut pos, tris) = folded_sheet(4, 4, 0.25, 0.125);
        let mut report = AuditReport::new();
        pos[5].z = f64::NAN;
        pos[9].x = f64::INFINITY;
        assert_eq!(
            audit_positions(&pos, &tris, 0.1, 4, &mut report),
            Err(AuditError::NonFinite {
                frame: 4,
                vertex: 5
            })
        );
        assert_eq!(report, AuditReport::new());
        pos[5].z = 0.0;
        pos[9].x = 0.0;
        let bad_tris = [[0, 1, 2], [0, 1, 99]];
        assert_eq!(
            audit_positions(&pos, &bad_tris, 0.1, 4, &mut report),
            Err(AuditError::BadIndex {
                frame: 4,
                triangle: 1,
                vertex: 99,
                vertices: 16
            })
        );
        assert_eq!(report, AuditReport::new());
        // Empty and single-triangle inputs are fine.
        assert_eq!(audit_frame(&[], &[], 1.0, 0).unwrap().intersecting_pairs, 0);
        let one = audit_frame(&pos, &tris[..1], 1.0, 0).unwrap();
        assert_eq!(one.min_distance, f64::INFINITY);
        // Degenerate triangles (repeated indices, all vertices equal) do not break the grid.
        let p = [DVec3::ZERO; 4];
        let r = audit_frame(&p, &[[0, 0, 0], [1, 2, 3]], 0.0, 0).unwrap();
        assert_eq!(r.intersecting_pairs, 1);
        assert_eq!(r.min_distance, 0.0);
    }
}
