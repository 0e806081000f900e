//! Broad phase of one step: the feature pairs whose swept, padded boxes overlap.
//!
//! Each item (triangle or isolated vertex) gets the box of its vertices at the start and end of
//! the step, padded. Items are binned in a uniform grid of hashed cells (a cell hash collision
//! only adds candidates); items spanning too many cells are checked against everything. The
//! candidate item pairs are sorted and deduplicated, expanded to feature pairs, and those sorted
//! and deduplicated too, so the output is a pure function of the input.

use glam::DVec3;
use rayon::prelude::*;

use super::primitives::{Feature, Primitives};

/// Items whose box spans more cells than this along one axis go to the everything-list.
const MAX_CELLS_PER_AXIS: i64 = 4;

/// An axis-aligned box.
#[derive(Clone, Copy, Debug)]
struct Aabb {
    min: DVec3,
    max: DVec3,
}

impl Aabb {
    fn overlaps(&self, other: &Aabb) -> bool {
        self.min.cmple(other.max).all() && other.min.cmple(self.max).all()
    }
}

/// The feature pairs whose boxes (vertices at `start` and `end`, padded by `pad` each) overlap,
/// sorted. Pairs whose four vertices are all immovable (`inv_mass == 0`) are left out: no
/// response can change them.
pub(crate) fn candidates(
    prims: &Primitives,
    start: &[DVec3],
    end: &[DVec3],
    pad: f64,
    inv_mass: &[f64],
) -> Vec<Feature> {
    let n = prims.item_count();
    let boxes: Vec<Aabb> = (0..n)
        .into_par_iter()
        .with_min_len(1024)
        .map(|i| {
            let mut b = Aabb {
                min: DVec3::INFINITY,
                max: DVec3::NEG_INFINITY,
            };
            for &v in prims.item_vertices(i) {
                let (p, q) = (start[v as usize], end[v as usize]);
                b.min = b.min.min(p).min(q);
                b.max = b.max.max(p).max(q);
            }
            b.min -= DVec3::splat(pad);
            b.max += DVec3::splat(pad);
            b
        })
        .collect();
    let pairs = item_pairs(&boxes);
    let keep = |f: &Feature| {
        let movable = f.verts.iter().any(|&v| inv_mass[v as usize] > 0.0);
        let split = match f.kind {
            super::ccd::Kind::VertexTriangle => 1,
            super::ccd::Kind::EdgeEdge => 2,
        };
        let bound = |vs: &[u32]| {
            let mut b = Aabb {
                min: DVec3::INFINITY,
                max: DVec3::NEG_INFINITY,
            };
            for &v in vs {
                let (p, q) = (start[v as usize], end[v as usize]);
                b.min = b.min.min(p).min(q);
                b.max = b.max.max(p).max(q);
            }
            b.min -= DVec3::splat(pad);
            b.max += DVec3::splat(pad);
            b
        };
        movable && bound(&f.verts[..split]).overlaps(&bound(&f.verts[split..]))
    };
    let (mut vt, mut ee): (Vec<u64>, Vec<u64>) = pairs
        .par_chunks(256)
        .map(|chunk| {
            let (mut vt, mut ee) = (Vec::new(), Vec::new());
            for &(a, b) in chunk {
                prims.features_of(a as usize, b as usize, keep, &mut vt, &mut ee);
            }
            (vt, ee)
        })
        .reduce(
            || (Vec::new(), Vec::new()),
            |(mut a, mut b), (c, d)| {
                a.extend(c);
                b.extend(d);
                (a, b)
            },
        );
    vt.par_sort_unstable();
    vt.dedup();
    ee.par_sort_unstable();
    ee.dedup();
    vt.iter()
        .map(|&k| prims.vertex_triangle(k))
        .chain(
            ee.iter()
                .map(|&k| prims.edge_edge((k >> 32) as u32, (k & 0xFFFF_FFFF) as u32)),
        )
        .collect()
}

/// Pairs `(a, b)`, `a < b`, of items whose boxes overlap, sorted.
fn item_pairs(boxes: &[Aabb]) -> Vec<(u32, u32)> {
    if boxes.is_empty() {
        return Vec::new();
    }
    // The cell from the finite boxes only: a box of non-finite vertices goes to the
    // everything-list, and must not make every other box span more cells than an `i64` counts.
    let (sum, count) = (boxes.iter())
        .map(|b| (b.max - b.min).max_element())
        .filter(|e| e.is_finite())
        .fold((0.0, 0u32), |(sum, count), e| (sum + e, count + 1));
    let mean_extent = sum / f64::from(count.max(1));
    let cell = (1.5 * mean_extent).clamp(f64::MIN_POSITIVE, f64::MAX);
    let coord = |x: DVec3| (x / cell).floor().as_i64vec3();
    let mut binned: Vec<(u64, u32)> = Vec::new();
    let mut big: Vec<u32> = Vec::new();
    for (i, b) in boxes.iter().enumerate() {
        let (lo, hi) = (coord(b.min), coord(b.max));
        // Saturating: cell coordinates saturate at the ends of `i64`, where a difference wraps.
        let span = (hi.x.saturating_sub(lo.x))
            .max(hi.y.saturating_sub(lo.y))
            .max(hi.z.saturating_sub(lo.z));
        if !b.min.is_finite() || !b.max.is_finite() || span >= MAX_CELLS_PER_AXIS {
            big.push(i as u32);
            continue;
        }
        for x in lo.x..=hi.x {
            for y in lo.y..=hi.y {
                for z in lo.z..=hi.z {
                    binned.push((cell_hash(x, y, z), i as u32));
                }
            }
        }
    }
    binned.par_sort_unstable();
    let mut pairs: Vec<(u32, u32)> = binned
        .par_chunk_by(|a, b| a.0 == b.0)
        .flat_map_iter(|run| {
            let mut out = Vec::new();
            for (k, &(_, a)) in run.iter().enumerate() {
                for &(_, b) in &run[k + 1..] {
                    // An item meets itself where two of its cells share a hash.
                    if a != b && boxes[a as usize].overlaps(&boxes[b as usize]) {
                        out.push((a.min(b), a.max(b)));
                    }
                }
            }
            out
        })
        .collect();
    for &a in &big {
        for b in 0..boxes.len() as u32 {
            if a != b && boxes[a as usize].overlaps(&boxes[b as usize]) {
                pairs.push((a.min(b), a.max(b)));
            }
        }
    }
    pairs.par_sort_unstable();
    pairs.dedup();
    pairs
}

/// A hash of a cell's integer coordinates.
fn cell_hash(x: i64, y: i64, z: i64) -> u64 {
    let mut h = (x as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^= (y as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h = h.rotate_left(31);
    h ^= (z as u64).wrapping_mul(0x1656_67B1_9E37_79F9);
    h ^ (h >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aabb(min: [f64; 3], max: [f64; 3]) -> Aabb {
        Aabb {
            min: DVec3::from(min),
            max: DVec3::from(max),
        }
    }

    #[test]
    fn boxes_of_any_size_are_paired_and_a_box_of_non_finite_vertices_meets_none() {
        // The empty box of an item whose vertices are all NaN once made the cell the smallest
        // `f64`, every other box a span of 2^64 cells, and the binning loop endless.
        let empty = aabb([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
        let boxes = [
            aabb([-1.0; 3], [1.0; 3]),
            empty,
            aabb([0.5; 3], [2.0; 3]),
            aabb([-1e300; 3], [1e300; 3]),
            aabb([5.0; 3], [6.0; 3]),
            aabb([f64::NEG_INFINITY; 3], [0.0; 3]),
        ];
        let brute: Vec<(u32, u32)> = (0..boxes.len() as u32)
            .flat_map(|a| (a + 1..boxes.len() as u32).map(move |b| (a, b)))
            .filter(|&(a, b)| boxes[a as usize].overlaps(&boxes[b as usize]))
            .collect();
        assert_eq!(item_pairs(&boxes), brute);
        assert!(!brute.iter().any(|&(a, b)| a == 1 || b == 1));
        assert_eq!(brute.len(), 6, "{brute:?}");
    }
}
