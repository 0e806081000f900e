//! Triangle strips: a triangle list in about one and a half indices a triangle instead of three,
//! as PLY's `tristrips` element stores it (one list of vertex indices, strips separated by
//! [`RESTART`]). In a strip `s`, the triangle ending at `s[k]` (counted from the strip's start)
//! is `(s[k-2], s[k-1], s[k])` for even `k` and `(s[k-1], s[k-2], s[k])` for odd `k`, so every
//! triangle keeps its winding.

use super::csr::Csr;

/// The index that ends one strip and starts the next (`-1` read as a signed PLY `int`).
pub(crate) const RESTART: u32 = u32::MAX;

/// Encodes `triangles` as strips joined by `RESTART`: each triangle appears once, as a
/// rotation of itself (same winding), in an order that follows shared edges.
///
/// Greedy and deterministic: from each triangle not yet in a strip (in index order), the
/// longest of the strips its three rotations start is kept, extended while the next triangle
/// across the strip's last edge with the right winding is free. A mesh with consistently
/// oriented neighbours gives long strips (about 1.6 indices a triangle on the sheet
/// generator's alternating grid); isolated triangles cost four indices. Uses a vertex-to-
/// triangle table (4 bytes a triangle corner) and no hash map.
pub fn triangle_strips(triangles: &[[u32; 3]]) -> Vec<u32> {
    let vertices = triangles
        .iter()
        .flatten()
        .max()
        .map_or(0, |&v| v as usize + 1);
    let around = Csr::from_pairs(
        vertices,
        triangles
            .iter()
            .enumerate()
            .flat_map(|(t, tri)| tri.map(|v| (v, t as u32))),
    );
    // The free triangle holding directed edge `p -> q`, and its third vertex.
    let across = |used: &[bool], p: u32, q: u32| {
        around.row(p as usize).iter().find_map(|&t| {
            let [a, b, c] = triangles[t as usize];
            let third = match (p, q) {
                _ if (a, b) == (p, q) => c,
                _ if (b, c) == (p, q) => a,
                _ if (c, a) == (p, q) => b,
                _ => return None,
            };
            (!used[t as usize]).then_some((t, third))
        })
    };
    let mut used = vec![false; triangles.len()];
    let mut strips = Vec::with_capacity(triangles.len() * 2);
    // Appends to `strip` (its first three set) while a next triangle is free; marks the
    // triangles it takes in `used` and returns them so a trial can be undone.
    let extend = |used: &mut Vec<bool>, strip: &mut Vec<u32>, taken: &mut Vec<u32>| loop {
        let k = strip.len();
        let (p, q) = (strip[strip.len() - 2], strip[strip.len() - 1]);
        let edge = if k % 2 == 0 { (p, q) } else { (q, p) };
        match across(used, edge.0, edge.1) {
            Some((t, third)) => {
                used[t as usize] = true;
                taken.push(t);
                strip.push(third);
            }
            None => return,
        }
    };
    let (mut strip, mut taken) = (Vec::new(), Vec::new());
    let mut best = Vec::new();
    for (t, &[a, b, c]) in triangles.iter().enumerate() {
        if used[t] {
            continue;
        }
        used[t] = true;
        best.clear();
        for start in [[a, b, c], [b, c, a], [c, a, b]] {
            strip.clear();
            strip.extend_from_slice(&start);
            taken.clear();
            extend(&mut used, &mut strip, &mut taken);
            for &u in &taken {
                used[u as usize] = false;
            }
            if strip.len() > best.len() {
                std::mem::swap(&mut best, &mut strip);
            }
        }
        // Take the longest for good.
        strip.clear();
        strip.extend_from_slice(&best[..3]);
        taken.clear();
        extend(&mut used, &mut strip, &mut taken);
        if !strips.is_empty() {
            strips.push(RESTART);
        }
        strips.extend_from_slice(&strip);
    }
    strips
}

/// Decodes strips joined by `RESTART` into triangles, in strip order; triangles with a
/// repeated vertex (the degenerate ones some writers use to join strips) are skipped.
pub fn strip_triangles(strips: &[u32]) -> Vec<[u32; 3]> {
    let mut triangles = Vec::with_capacity(strips.len());
    for strip in strips.split(|&v| v == RESTART) {
        for (k, w) in strip.windows(3).enumerate() {
            let t = if k % 2 == 0 {
                [w[0], w[1], w[2]]
            } else {
                [w[1], w[0], w[2]]
            };
            if t[0] != t[1] && t[1] != t[2] && t[0] != t[2] {
                triangles.push(t);
            }
        }
    }
    triangles
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{icosphere, sheet};

    /// `triangles` rotated so each starts at its smallest vertex, sorted: equal for two lists of
    /// the same triangles with the same windings.
    fn canonical(triangles: &[[u32; 3]]) -> Vec<[u32; 3]> {
        let mut out: Vec<[u32; 3]> = triangles
            .iter()
            .map(|&[a, b, c]| match a.min(b).min(c) {
                m if m == a => [a, b, c],
                m if m == b => [b, c, a],
                _ => [c, a, b],
            })
            .collect();
        out.sort_unstable();
        out
    }

    #[test]
    fn strips_hold_every_triangle_once_with_its_winding() {
        let grid = sheet(40, 30, 1.0, 1.0).unwrap().triangles;
        let sphere = icosphere(1.0, 3).unwrap().triangles;
        // Two objects, the second flipped (inconsistent windings between them), and a lone
        // triangle.
        let mut mixed = grid.clone();
        mixed.extend(
            sphere
                .iter()
                .map(|t| [t[0] + 1200, t[2] + 1200, t[1] + 1200]),
        );
        mixed.push([5000, 5001, 5002]);
        for (triangles, most_indices_a_triangle) in [(&grid, 1.7), (&sphere, 2.0), (&mixed, 2.0)] {
            let strips = triangle_strips(triangles);
            assert_eq!(canonical(&strip_triangles(&strips)), canonical(triangles));
            let per_triangle = strips.len() as f64 / triangles.len() as f64;
            assert!(per_triangle < most_indices_a_triangle, "{per_triangle}");
        }
        assert_eq!(triangle_strips(&[]), Vec::<u32>::new());
        assert_eq!(
            triangle_strips(&[[0, 1, 2], [7, 8, 9]]),
            [0, 1, 2, RESTART, 7, 8, 9]
        );
    }

    #[test]
    fn decoding_flips_odd_triangles_and_skips_degenerate_ones() {
        let strips = [0, 1, 2, 3, 3, 4, RESTART, 5, 6, 7];
        assert_eq!(
            strip_triangles(&strips),
            vec![[0, 1, 2], [2, 1, 3], [5, 6, 7]]
        );
    }
}
