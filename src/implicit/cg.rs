//! The unconstrained step `A v* = b` by conjugate gradients with a block-Jacobi (3x3)
//! preconditioner, on the free vertices.
//!
//! `A = M + h C + h^2 K` is symmetric positive definite on the free vertices (a positive mass
//! plus PSD blocks), so CG converges; the mass term keeps it well conditioned for the steps the
//! integrator takes, so a direct sparse factorization is not needed. The contact solver
//! ([`super::ica`]) relaxes on `A` itself and never factorizes it either.

use glam::DVec3;

use super::matrix::{dot, BlockMatrix};

/// How a solve ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct CgReport {
    /// Iterations taken.
    pub iterations: u32,
    /// `|b - A x| / |b|` at the end (0 for `b = 0`).
    pub relative_residual: f64,
}

/// Solves `P A P x = P b` (`P` keeps the vertices with `free[i]`) from the initial guess in `x`
/// (whose other entries are left as they are) to relative residual `tolerance`, in at most
/// `max_iterations` iterations.
pub(crate) fn solve(
    a: &BlockMatrix,
    b: &[DVec3],
    free: &[bool],
    x: &mut [DVec3],
    tolerance: f64,
    max_iterations: u32,
) -> CgReport {
    let n = a.len();
    let inverse = a.inverse_diagonal(free);
    let masked = |i: usize, p: DVec3| if free[i] { p } else { DVec3::ZERO };
    let guess: Vec<DVec3> = (0..n).map(|i| masked(i, x[i])).collect();
    let mut ax = vec![DVec3::ZERO; n];
    a.mul_free(&guess, free, &mut ax);
    let mut r: Vec<DVec3> = (0..n).map(|i| masked(i, b[i] - ax[i])).collect();
    let b_norm = dot(b, b).sqrt();
    let mut report = CgReport {
        iterations: 0,
        relative_residual: 0.0,
    };
    if b_norm == 0.0 && dot(&r, &r) == 0.0 {
        return report;
    }
    let scale = if b_norm > 0.0 { b_norm } else { 1.0 };
    let mut z: Vec<DVec3> = inverse.iter().zip(&r).map(|(m, ri)| *m * *ri).collect();
    let mut p = z.clone();
    let mut rz = dot(&r, &z);
    let mut ap = vec![DVec3::ZERO; n];
    let mut sol = guess;
    loop {
        report.relative_residual = dot(&r, &r).sqrt() / scale;
        if report.relative_residual <= tolerance || report.iterations >= max_iterations {
            break;
        }
        a.mul_free(&p, free, &mut ap);
        let pap = dot(&p, &ap);
        if pap.is_nan() || pap <= 0.0 {
            break;
        }
        let alpha = rz / pap;
        for i in 0..n {
            sol[i] += alpha * p[i];
            r[i] -= alpha * ap[i];
            z[i] = inverse[i] * r[i];
        }
        let rz_next = dot(&r, &z);
        let beta = rz_next / rz;
        rz = rz_next;
        for i in 0..n {
            p[i] = z[i] + beta * p[i];
        }
        report.iterations += 1;
    }
    for i in 0..n {
        if free[i] {
            x[i] = sol[i];
        }
    }
    report
}
