//! Dense reference linear algebra for the tests of this module: Gaussian elimination with
//! partial pivoting, and the flattening of block quantities.

use glam::DVec3;

use super::matrix::BlockMatrix;

/// Solves `a x = b` (row-major `n x n`) by Gaussian elimination with partial pivoting.
pub(super) fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap();
        a.swap(col, pivot);
        b.swap(col, pivot);
        let (top, bottom) = a.split_at_mut(col + 1);
        let pivot_row = &top[col];
        for (r, target) in bottom.iter_mut().enumerate() {
            let f = target[col] / pivot_row[col];
            for (t, p) in target[col..].iter_mut().zip(&pivot_row[col..]) {
                *t -= f * p;
            }
            b[col + 1 + r] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    x
}

/// The rows and columns of `a` of the vertices in `dofs`, as a dense matrix (three rows each).
pub(super) fn restrict(a: &BlockMatrix, dofs: &[usize]) -> Vec<Vec<f64>> {
    let m = 3 * dofs.len();
    let mut out = vec![vec![0.0; m]; m];
    for (r, &i) in dofs.iter().enumerate() {
        for (j, block) in a.row(i) {
            if let Some(c) = dofs.iter().position(|&d| d == j) {
                for (p, q) in (0..3).flat_map(|p| (0..3).map(move |q| (p, q))) {
                    out[3 * r + p][3 * c + q] = block.col(q)[p];
                }
            }
        }
    }
    out
}

/// The entries of `x` at `dofs`, flattened.
pub(super) fn flatten(x: &[DVec3], dofs: &[usize]) -> Vec<f64> {
    dofs.iter().flat_map(|&i| x[i].to_array()).collect()
}
