//! Iterative constraint anticipation (the paper's §5): the nested-relaxation solver of the
//! mixed LCP
//!
//! ```text
//! A dv = J^T lambda + H^T gamma,   0 <= lambda  _|_  J (v* + dv) - target >= 0,
//! |gamma_k| <= mu lambda  _|_  H (v* + dv) = 0  (four-sided friction pyramid)
//! ```
//!
//! **Outer loop**: one block Gauss-Seidel sweep (3x3 blocks) of `A dv = J^T lambda + H^T gamma`
//! per iteration (eq. 12). **Inner loop**: the constraints anticipate the outer problem by block
//! Jacobi, `dv ~ D_A^-1 ((L_A + U_A) dv_prev + J^T lambda + H^T gamma)`, which gives the sparse
//! LCP `B lambda >= c(i)` with `B = J D_A^-1 J^T` (eq. 10), solved by projected Gauss-Seidel,
//! normal and friction multipliers interlaced contact by contact, three times each (§5.5).
//! `D_A^-1 J^T` (and `D_A^-1 H^T`) are built once per solve; `B` is applied as `J` times them
//! (the anticipated velocity change of the multipliers), which is `B` without storing it.
//!
//! **Termination** (§5.5): the inner loop stops when the residual of the complementarity
//! conditions changes by less than `tolerance` (5%) between sweeps and every contact is at
//! least half the safety distance apart at the end of the step (`J v >= target - slack`); the
//! outer loop when, in addition, the residual of `A dv - J^T lambda - H^T gamma` changes by less
//! than `tolerance` between iterations (re-evaluating the LCP residuals after the response).
//!
//! Every loop runs in a fixed order, so the result is a pure function of the input.

use glam::DVec3;

use super::matrix::BlockMatrix;

/// One contact row block: the normal constraint and its two friction directions, over four
/// vertices with signed weights.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ContactRow {
    /// The four vertices.
    pub verts: [u32; 4],
    /// Their signed weights (`sum w_k v_k` is the relative velocity).
    pub weights: [f64; 4],
    /// Unit normal, then the two unit tangents of the friction pyramid.
    pub dirs: [DVec3; 3],
    /// The normal constraint asks `n . sum w_k v_k >= target`.
    pub target: f64,
    /// Friction coefficient of the pyramid (`|gamma_k| <= mu lambda`).
    pub mu: f64,
    /// Normal multiplier (warm start in, solution out).
    pub lambda: f64,
    /// Friction multipliers along the two tangents.
    pub gamma: [f64; 2],
}

impl ContactRow {
    /// `dir_r . sum w_k z_k`.
    fn row_value(&self, r: usize, z: &[DVec3]) -> f64 {
        (0..4)
            .map(|k| self.weights[k] * self.dirs[r].dot(z[self.verts[k] as usize]))
            .sum()
    }

    /// The multipliers as `[lambda, gamma_1, gamma_2]`.
    fn multipliers(&self) -> [f64; 3] {
        [self.lambda, self.gamma[0], self.gamma[1]]
    }
}

/// Parameters of a solve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct IcaParams {
    /// Most outer iterations.
    pub max_outer: u32,
    /// Most inner sweeps per outer iteration.
    pub max_sweeps: u32,
    /// Relative change of the residuals that ends the loops (the paper's 0.05).
    pub tolerance: f64,
    /// How far below its target a constraint may end (the paper's half safety distance over
    /// the step, `delta / 2h`); 0 asks for the targets exactly.
    pub slack: f64,
}

/// How a solve went.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct IcaReport {
    /// Outer iterations taken.
    pub outer: u32,
    /// Inner sweeps, summed over outer iterations.
    pub sweeps: u32,
    /// Whether the outer loop met its termination rule (otherwise it ran out of iterations).
    pub converged: bool,
}

/// Whether a residual settled: it changed by at most `tolerance` of its previous value.
fn settled(previous: Option<f64>, now: f64, tolerance: f64) -> bool {
    previous.is_some_and(|p| (now - p).abs() <= tolerance * p) || now == 0.0
}

/// Solves for `dv` (warm start in `dv`, which must be zero on immovable vertices) and the
/// contacts' multipliers, given `A` (with `free` its unknown vertices) and the unconstrained
/// velocities `v_star` (immovable entries: their given velocities).
pub(crate) fn solve(
    a: &BlockMatrix,
    free: &[bool],
    v_star: &[DVec3],
    contacts: &mut [ContactRow],
    dv: &mut [DVec3],
    params: IcaParams,
) -> IcaReport {
    let n = a.len();
    let dinv = a.inverse_diagonal(free);
    // D_A^-1 J^T and D_A^-1 H^T, per contact, direction and vertex, and the diagonal of B.
    let columns: Vec<[[DVec3; 4]; 3]> = contacts
        .iter()
        .map(|c| {
            std::array::from_fn(|r| {
                std::array::from_fn(|k| dinv[c.verts[k] as usize] * (c.weights[k] * c.dirs[r]))
            })
        })
        .collect();
    let diagonal: Vec<[f64; 3]> = contacts
        .iter()
        .zip(&columns)
        .map(|(c, col)| {
            std::array::from_fn(|r| {
                (0..4)
                    .map(|k| c.weights[k] * c.dirs[r].dot(col[r][k]))
                    .sum()
            })
        })
        .collect();
    let mut base = vec![DVec3::ZERO; n];
    let mut u = vec![DVec3::ZERO; n];
    let mut force = vec![DVec3::ZERO; n];
    let mut z = vec![DVec3::ZERO; n];
    let mut v = vec![DVec3::ZERO; n];
    let mut report = IcaReport::default();
    let mut outer_residual = None;
    let mut lcp_residual = None;
    while report.outer < params.max_outer {
        report.outer += 1;
        // Anticipation base: v* + D^-1 (L + U) dv.
        for i in 0..n {
            base[i] = if free[i] {
                let off: DVec3 = a
                    .row(i)
                    .filter(|&(j, _)| j != i && free[j])
                    .map(|(j, b)| *b * dv[j])
                    .sum();
                v_star[i] - dinv[i] * off
            } else {
                v_star[i]
            };
        }
        u.fill(DVec3::ZERO);
        for (c, col) in contacts.iter().zip(&columns) {
            for (r, m) in c.multipliers().into_iter().enumerate() {
                for k in 0..4 {
                    u[c.verts[k] as usize] += m * col[r][k];
                }
            }
        }
        for i in 0..n {
            z[i] = base[i] + u[i];
        }
        let mut inner = None;
        for _ in 0..params.max_sweeps {
            report.sweeps += 1;
            for (j, c) in contacts.iter_mut().enumerate() {
                for _ in 0..3 {
                    relax(c, &columns[j], &diagonal[j], &mut z);
                }
            }
            let res = residual(contacts, &diagonal, &z);
            let done = settled(inner, res, params.tolerance) && gaps_hold(contacts, &z, params);
            inner = Some(res);
            if done {
                break;
            }
        }
        // Outer: one block Gauss-Seidel sweep of A dv = J^T lambda + H^T gamma.
        impulses(contacts, &mut force);
        for i in (0..n).filter(|&i| free[i]) {
            let off: DVec3 = a
                .row(i)
                .filter(|&(j, _)| j != i && free[j])
                .map(|(j, b)| *b * dv[j])
                .sum();
            dv[i] = dinv[i] * (force[i] - off);
        }
        let mut res2 = 0.0;
        for i in (0..n).filter(|&i| free[i]) {
            let r: DVec3 = a
                .row(i)
                .filter(|&(j, _)| free[j])
                .map(|(j, b)| *b * dv[j])
                .sum::<DVec3>()
                - force[i];
            res2 += r.length_squared();
        }
        for i in 0..n {
            v[i] = v_star[i] + dv[i];
        }
        let res = res2.sqrt();
        let lcp = residual(contacts, &diagonal, &v);
        let done = settled(outer_residual, res, params.tolerance)
            && settled(lcp_residual, lcp, params.tolerance)
            && gaps_hold(contacts, &v, params);
        outer_residual = Some(res);
        lcp_residual = Some(lcp);
        if done {
            report.converged = true;
            break;
        }
    }
    report
}

/// `out = J^T lambda + H^T gamma`: the contacts' impulses on each vertex, summed in contact
/// order.
fn impulses(contacts: &[ContactRow], out: &mut [DVec3]) {
    out.fill(DVec3::ZERO);
    for c in contacts {
        for (r, m) in c.multipliers().into_iter().enumerate() {
            for k in 0..4 {
                out[c.verts[k] as usize] += (m * c.weights[k]) * c.dirs[r];
            }
        }
    }
}

/// One projected Gauss-Seidel update of contact `c` (normal, then each friction direction),
/// keeping the anticipated velocities `z` up to date.
fn relax(c: &mut ContactRow, col: &[[DVec3; 4]; 3], diag: &[f64; 3], z: &mut [DVec3]) {
    let apply = |r: usize, change: f64, z: &mut [DVec3]| {
        for k in 0..4 {
            z[c.verts[k] as usize] += change * col[r][k];
        }
    };
    if diag[0] > 0.0 {
        let old = c.lambda;
        c.lambda = (old - (c.row_value(0, z) - c.target) / diag[0]).max(0.0);
        apply(0, c.lambda - old, z);
    }
    for t in 0..2 {
        let r = t + 1;
        if diag[r] <= 0.0 {
            continue;
        }
        let bound = c.mu * c.lambda;
        let old = c.gamma[t];
        c.gamma[t] = (old - c.row_value(r, z) / diag[r]).clamp(-bound, bound);
        apply(r, c.gamma[t] - old, z);
    }
}

/// The natural-map residual of the normal and friction complementarity conditions at
/// velocities `z`: the length of the vector of `m - proj(m - row / B_rr)` over all rows.
fn residual(contacts: &[ContactRow], diagonal: &[[f64; 3]], z: &[DVec3]) -> f64 {
    let mut sum = 0.0;
    for (c, d) in contacts.iter().zip(diagonal) {
        if d[0] > 0.0 {
            let step = (c.lambda - (c.row_value(0, z) - c.target) / d[0]).max(0.0);
            sum += (c.lambda - step).powi(2);
        }
        for t in 0..2 {
            if d[t + 1] > 0.0 {
                let bound = c.mu * c.lambda;
                let step = (c.gamma[t] - c.row_value(t + 1, z) / d[t + 1]).clamp(-bound, bound);
                sum += (c.gamma[t] - step).powi(2);
            }
        }
    }
    sum.sqrt()
}

/// Whether every contact ends within `slack` of its target at velocities `z`.
fn gaps_hold(contacts: &[ContactRow], z: &[DVec3], params: IcaParams) -> bool {
    contacts
        .iter()
        .all(|c| c.row_value(0, z) >= c.target - params.slack)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::implicit::dense;
    use crate::test_rng::Rng;
    use glam::{DMat3, DQuat};

    /// A random problem over 8 vertices (the last immovable): `A` = masses plus random PSD
    /// couplings along a chain and a few random pairs, random `v*`, and `m` contacts on random
    /// vertices with random weights, normals and targets.
    fn problem(seed: u64, m: usize) -> (BlockMatrix, Vec<bool>, Vec<DVec3>, Vec<ContactRow>) {
        let mut rng = Rng(seed);
        let n = 8;
        let mut pairs: Vec<[u32; 2]> = (0..n as u32 - 1).map(|i| [i, i + 1]).collect();
        for _ in 0..4 {
            let p = (rng.next_u64() % n as u64) as u32;
            let q = (p + 2 + (rng.next_u64() % (n as u64 - 3)) as u32) % n as u32;
            pairs.push([p, q]);
        }
        let mut a = BlockMatrix::new(n, pairs.iter().map(|p| &p[..]));
        for i in 0..n as u32 {
            a.add(
                i,
                i,
                DMat3::from_diagonal(DVec3::splat(rng.uniform(0.5, 2.0))),
            );
        }
        for &[p, q] in &pairs {
            let r = rng.vec(1.0);
            let k = DMat3::from_cols(r * r.x, r * r.y, r * r.z)
                + DMat3::from_diagonal(DVec3::splat(0.1));
            a.add(p, p, k);
            a.add(q, q, k);
            a.add(p, q, -k);
            a.add(q, p, -k);
        }
        let free: Vec<bool> = (0..n).map(|i| i + 1 < n).collect();
        let v_star: Vec<DVec3> = (0..n).map(|_| rng.vec(1.0)).collect();
        let contacts = (0..m)
            .map(|_| {
                let mut verts = [0u32; 4];
                for k in 0..4 {
                    verts[k] = loop {
                        let c = (rng.next_u64() % n as u64) as u32;
                        if !verts[..k].contains(&c) {
                            break c;
                        }
                    };
                }
                let normal = rng.vec(1.0).normalize();
                ContactRow {
                    verts,
                    weights: std::array::from_fn(|_| rng.uniform(-1.0, 1.0)),
                    dirs: [normal, DVec3::ZERO, DVec3::ZERO],
                    target: rng.uniform(-1.0, 1.0),
                    mu: 0.0,
                    lambda: 0.0,
                    gamma: [0.0; 2],
                }
            })
            .collect();
        (a, free, v_star, contacts)
    }

    /// The multipliers `[lambda, gamma_1, gamma_2]` of the full constraint anticipation (the
    /// paper's eq. 8, with the friction rows of eq. 7): `B = [J; H] A^-1 [J; H]^T` with `A^-1`
    /// by dense solves, solved by projected Gauss-Seidel run long, normal then friction rows of
    /// each contact (a row with no direction is left at zero).
    fn reference(
        a: &BlockMatrix,
        free: &[bool],
        v_star: &[DVec3],
        rows: &[ContactRow],
    ) -> Vec<[f64; 3]> {
        let dofs: Vec<usize> = (0..free.len()).filter(|&i| free[i]).collect();
        let dense_a = dense::restrict(a, &dofs);
        let jacobian: Vec<Vec<f64>> = rows
            .iter()
            .flat_map(|c| (0..3).map(move |r| (c, r)))
            .map(|(c, r)| {
                let mut row = vec![0.0; 3 * dofs.len()];
                for k in 0..4 {
                    if let Some(d) = dofs.iter().position(|&i| i == c.verts[k] as usize) {
                        for q in 0..3 {
                            row[3 * d + q] += c.weights[k] * c.dirs[r][q];
                        }
                    }
                }
                row
            })
            .collect();
        let anticipated: Vec<Vec<f64>> = jacobian
            .iter()
            .map(|j| dense::solve(dense_a.clone(), j.clone()))
            .collect();
        let n = jacobian.len();
        let b: Vec<Vec<f64>> = (0..n)
            .map(|r| {
                (0..n)
                    .map(|s| {
                        jacobian[r]
                            .iter()
                            .zip(&anticipated[s])
                            .map(|(p, q)| p * q)
                            .sum()
                    })
                    .collect()
            })
            .collect();
        let c: Vec<f64> = rows
            .iter()
            .flat_map(|c| (0..3).map(move |r| (c, r)))
            .map(|(c, r)| {
                let target = if r == 0 { c.target } else { 0.0 };
                target - c.row_value(r, v_star)
            })
            .collect();
        let mut m = vec![0.0; n];
        for _ in 0..100_000 {
            for r in 0..n {
                if b[r][r] <= 0.0 {
                    continue;
                }
                let w: f64 = (0..n).map(|s| b[r][s] * m[s]).sum::<f64>() - c[r];
                let step = m[r] - w / b[r][r];
                m[r] = if r % 3 == 0 {
                    step.max(0.0)
                } else {
                    let bound = rows[r / 3].mu * m[r - r % 3];
                    step.clamp(-bound, bound)
                };
            }
        }
        m.chunks(3).map(|x| [x[0], x[1], x[2]]).collect()
    }

    /// ICA with a tolerance of 1e-13 and no slack, from zero, so that it runs to convergence
    /// (2,000 outer iterations at most); returns `dv`.
    fn converge(
        a: &BlockMatrix,
        free: &[bool],
        v_star: &[DVec3],
        rows: &mut [ContactRow],
    ) -> Vec<DVec3> {
        let mut dv = vec![DVec3::ZERO; free.len()];
        let params = IcaParams {
            max_outer: 2_000,
            max_sweeps: 20,
            tolerance: 1e-13,
            slack: 0.0,
        };
        solve(a, free, v_star, rows, &mut dv, params);
        dv
    }

    /// ICA run to convergence (tolerance 1e-13, no slack) agrees with the full constraint
    /// anticipation solved densely, on 20 random problems with 1 to 6 contacts. Measured: the
    /// largest difference is 2.0e-14 of the largest multiplier; asserted at 1e-11.
    #[test]
    fn ica_matches_a_dense_lcp_solution_on_random_problems() {
        let mut active = 0;
        for seed in 0..20 {
            let (a, free, v_star, mut rows) = problem(seed, 1 + (seed as usize % 6));
            let expected = reference(&a, &free, &v_star, &rows);
            let dv = converge(&a, &free, &v_star, &mut rows);
            let scale = expected.iter().fold(1e-3f64, |m, l| m.max(l[0]));
            for (r, e) in rows.iter().zip(&expected) {
                let e = e[0];
                assert!(
                    (r.lambda - e).abs() <= 1e-11 * scale,
                    "seed {seed}: lambda {} against {e} (scale {scale})",
                    r.lambda
                );
            }
            assert_eq!(
                dv[free.len() - 1],
                DVec3::ZERO,
                "the immovable vertex is not moved"
            );
            active += expected.iter().filter(|l| l[0] > 0.0).count();
        }
        assert!(active >= 10, "the problems have active contacts: {active}");
    }

    /// With friction (mu = 0.5, a random tangent frame per contact) the interlaced normal and
    /// friction relaxation of ICA agrees with the same projection run long on the full
    /// anticipation, on 20 random problems with 1 to 4 contacts (6 of the active contacts
    /// stick, 22 slide on the pyramid's edge). Measured: the largest difference is 9.7e-16 of
    /// the largest multiplier; asserted at 1e-11.
    #[test]
    fn ica_with_friction_matches_the_dense_solution_on_random_problems() {
        let (mut sticking, mut sliding) = (0, 0);
        for seed in 100..120 {
            let (a, free, v_star, mut rows) = problem(seed, 1 + (seed as usize % 4));
            let mut rng = Rng(seed);
            for c in &mut rows {
                let t1 = c.dirs[0].any_orthonormal_vector();
                let angle = rng.uniform(0.0, std::f64::consts::TAU);
                let t1 = DQuat::from_axis_angle(c.dirs[0], angle) * t1;
                c.dirs[1] = t1;
                c.dirs[2] = c.dirs[0].cross(t1);
                c.mu = 0.5;
            }
            let expected = reference(&a, &free, &v_star, &rows);
            let dv = converge(&a, &free, &v_star, &mut rows);
            assert_eq!(
                dv[free.len() - 1],
                DVec3::ZERO,
                "the immovable vertex is not moved"
            );
            let scale = expected
                .iter()
                .flatten()
                .fold(1e-3f64, |m, l| m.max(l.abs()));
            for (r, e) in rows.iter().zip(&expected) {
                let got = [r.lambda, r.gamma[0], r.gamma[1]];
                for k in 0..3 {
                    assert!(
                        (got[k] - e[k]).abs() <= 1e-11 * scale,
                        "seed {seed}: {got:?} against {e:?} (scale {scale})"
                    );
                }
                if e[0] > 0.0 {
                    let bound = 0.5 * e[0];
                    if e[1].abs() < bound * (1.0 - 1e-9) && e[2].abs() < bound * (1.0 - 1e-9) {
                        sticking += 1;
                    } else {
                        sliding += 1;
                    }
                }
            }
        }
        assert!(
            sticking > 0 && sliding > 0,
            "{sticking} sticking, {sliding} sliding"
        );
    }
}
