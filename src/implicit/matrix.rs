//! A sparse symmetric matrix of 3x3 blocks, one block row per vertex (block CSR), with the
//! products that the implicit step needs restricted to the free vertices.
//!
//! The pattern is built once from the elements' stencils (every pair of vertices in one stencil
//! couples); each step clears the values and adds element blocks into it. Sums are in a fixed
//! order (element order, then column order), so results do not depend on the thread count.

use glam::{DMat3, DVec3};
use rayon::prelude::*;

/// Rows handled by one parallel task in products and dot products (fixed, so partial sums are
/// grouped the same way on any number of threads).
pub(crate) const CHUNK: usize = 1024;

/// The block matrix (see the module docs).
#[derive(Clone, Debug, Default)]
pub(crate) struct BlockMatrix {
    /// `row_start[i]..row_start[i + 1]` are row `i`'s entries.
    row_start: Vec<usize>,
    /// Column of each entry, increasing within a row.
    cols: Vec<u32>,
    /// Value of each entry.
    blocks: Vec<DMat3>,
    /// Per row, the entry of its diagonal block.
    diag: Vec<usize>,
}

impl BlockMatrix {
    /// The pattern over `n` vertices in which the vertices of each stencil couple; every
    /// diagonal block is present. Values start at zero.
    pub(crate) fn new<'a>(n: usize, stencils: impl Iterator<Item = &'a [u32]>) -> Self {
        let mut pairs: Vec<(u32, u32)> = (0..n as u32).map(|i| (i, i)).collect();
        for s in stencils {
            for &a in s {
                for &b in s {
                    if a != b {
                        pairs.push((a, b));
                    }
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let mut row_start = vec![0; n + 1];
        for &(a, _) in &pairs {
            row_start[a as usize + 1] += 1;
        }
        for i in 0..n {
            row_start[i + 1] += row_start[i];
        }
        let cols: Vec<u32> = pairs.iter().map(|&(_, b)| b).collect();
        let diag = (0..n)
            .map(|i| {
                row_start[i]
                    + cols[row_start[i]..row_start[i + 1]].partition_point(|&c| c < i as u32)
            })
            .collect();
        Self {
            row_start,
            blocks: vec![DMat3::ZERO; cols.len()],
            cols,
            diag,
        }
    }

    /// Number of block rows.
    pub(crate) fn len(&self) -> usize {
        self.diag.len()
    }

    /// Sets every value to zero.
    pub(crate) fn clear(&mut self) {
        self.blocks.fill(DMat3::ZERO);
    }

    /// Adds `block` at `(i, j)`, which must be in the pattern.
    pub(crate) fn add(&mut self, i: u32, j: u32, block: DMat3) {
        let (lo, hi) = (self.row_start[i as usize], self.row_start[i as usize + 1]);
        let k = lo + self.cols[lo..hi].partition_point(|&c| c < j);
        debug_assert_eq!(self.cols[k], j, "({i}, {j}) is not in the pattern");
        self.blocks[k] += block;
    }

    /// The diagonal block of row `i`.
    pub(crate) fn diagonal(&self, i: usize) -> DMat3 {
        self.blocks[self.diag[i]]
    }

    /// The inverses of the diagonal blocks of the free vertices (`free[i]`; zero for the
    /// others).
    pub(crate) fn inverse_diagonal(&self, free: &[bool]) -> Vec<DMat3> {
        (0..self.len())
            .map(|i| {
                if free[i] {
                    self.diagonal(i).inverse()
                } else {
                    DMat3::ZERO
                }
            })
            .collect()
    }

    /// The entries `(column, block)` of row `i`.
    pub(crate) fn row(&self, i: usize) -> impl Iterator<Item = (usize, &DMat3)> {
        let r = self.row_start[i]..self.row_start[i + 1];
        self.cols[r.clone()]
            .iter()
            .map(|&c| c as usize)
            .zip(&self.blocks[r])
    }

    /// `out = P A P x`, where `P` keeps the free vertices (`free[i]`) and zeroes the others.
    pub(crate) fn mul_free(&self, x: &[DVec3], free: &[bool], out: &mut [DVec3]) {
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, chunk)| {
                for (k, o) in chunk.iter_mut().enumerate() {
                    let i = c * CHUNK + k;
                    *o = if free[i] {
                        self.row(i)
                            .filter(|&(j, _)| free[j])
                            .map(|(j, b)| *b * x[j])
                            .sum()
                    } else {
                        DVec3::ZERO
                    };
                }
            });
    }
}

/// `sum a_i . b_i`, summed in fixed chunks (the same on any number of threads).
pub(crate) fn dot(a: &[DVec3], b: &[DVec3]) -> f64 {
    let partial: Vec<f64> = a
        .par_chunks(CHUNK)
        .zip(b.par_chunks(CHUNK))
        .map(|(x, y)| x.iter().zip(y).map(|(p, q)| p.dot(*q)).sum())
        .collect();
    partial.iter().sum()
}
