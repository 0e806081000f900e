//! Convex quadratic programs, assembled row by row and solved by `clarabel` (an interior-point
//! method that returns certificates of infeasibility).
//!
//! A problem is `min 0.5 x^T P x + q^T x` subject to linear equalities, linear inequalities
//! `a^T x <= b`, and second-order cones `(s0, s1, s2)` with `s0 >= |(s1, s2)|` over affine
//! expressions `s_k = c_k^T x + d_k` (the exact friction cone).

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSolver, IPSolver, NonnegativeConeT, SecondOrderConeT, SolverStatus,
    SupportedConeT, ZeroConeT,
};

/// An affine expression `sum coef x[index] + constant`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Affine {
    /// `(variable, coefficient)` terms (a variable may repeat: the terms add).
    pub terms: Vec<(usize, f64)>,
    /// The constant.
    pub constant: f64,
}

/// A quadratic program under assembly.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Qp {
    /// Number of variables.
    pub variables: usize,
    /// Objective Hessian entries `(i, j, value)` with `i <= j` (the upper triangle; repeats add).
    pub hessian: Vec<(usize, usize, f64)>,
    /// Objective gradient `q`.
    pub linear: Vec<f64>,
    /// Rows `a^T x = b`.
    pub equalities: Vec<Affine>,
    /// Rows `a^T x <= b`, as `a^T x - b` in [`Affine`] form (constant `-b`).
    pub inequalities: Vec<Affine>,
    /// Second-order cones over three affine expressions each.
    pub cones: Vec<[Affine; 3]>,
}

/// A solved program: the minimizer and the multipliers of its rows.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Solution {
    /// The minimizer.
    pub x: Vec<f64>,
    /// The multiplier of each equality row, in the order they were added.
    pub equality_duals: Vec<f64>,
    /// The multiplier (`>= 0`) of each inequality row, in the order they were added.
    pub inequality_duals: Vec<f64>,
}

/// Why a program has no solution.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum QpFailure {
    /// The constraints admit no point (a certificate of primal infeasibility was found).
    #[error("infeasible")]
    Infeasible,
    /// The solver stopped without a solution (iteration limit, numerical trouble).
    #[error("the QP solver stopped without a solution: {0}")]
    Unsolved(String),
}

impl Qp {
    /// A program over `variables` unknowns with a zero objective and no constraints.
    pub(crate) fn new(variables: usize) -> Self {
        Self {
            variables,
            linear: vec![0.0; variables],
            ..Self::default()
        }
    }

    /// Adds `value` to `P[i][j]` (and, for `i != j`, to `P[j][i]`).
    pub(crate) fn add_hessian(&mut self, i: usize, j: usize, value: f64) {
        self.hessian.push((i.min(j), i.max(j), value));
    }

    /// Adds `(weight / 2) |x[at..at+3] - target|^2`-style terms for a 3x3 weight: the objective
    /// gains `0.5 (x - t)^T W (x - t)` over variables `at..at + 3` (its constant dropped).
    pub(crate) fn add_weighted_distance(
        &mut self,
        at: usize,
        weight: glam::DMat3,
        target: glam::DVec3,
    ) {
        let w = weight.to_cols_array_2d();
        for (i, column) in w.iter().enumerate() {
            for (j, &value) in column.iter().enumerate() {
                // Column i, row j: W[j][i].
                if j <= i && value != 0.0 {
                    self.hessian.push((at + j, at + i, value));
                }
            }
        }
        let g = weight * target;
        for k in 0..3 {
            self.linear[at + k] -= g[k];
        }
    }

    /// Adds the row `terms . x = rhs`.
    pub(crate) fn equal(&mut self, terms: Vec<(usize, f64)>, rhs: f64) {
        self.equalities.push(Affine {
            terms,
            constant: -rhs,
        });
    }

    /// Adds the row `terms . x <= rhs`.
    pub(crate) fn at_most(&mut self, terms: Vec<(usize, f64)>, rhs: f64) {
        self.inequalities.push(Affine {
            terms,
            constant: -rhs,
        });
    }

    /// Adds the row `terms . x >= rhs`.
    pub(crate) fn at_least(&mut self, terms: Vec<(usize, f64)>, rhs: f64) {
        let negated = terms.into_iter().map(|(i, c)| (i, -c)).collect();
        self.at_most(negated, -rhs);
    }

    /// Adds the second-order cone `s0 >= |(s1, s2)|`.
    pub(crate) fn cone(&mut self, s: [Affine; 3]) {
        self.cones.push(s);
    }

    /// Solves the program: its minimizer.
    pub(crate) fn solve(&self) -> Result<Vec<f64>, QpFailure> {
        self.solve_with_duals().map(|s| s.x)
    }

    /// Solves the program: its minimizer and the rows' multipliers.
    pub(crate) fn solve_with_duals(&self) -> Result<Solution, QpFailure> {
        let n = self.variables;
        let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
        let mut b = Vec::new();
        // clarabel's form: A x + s = b with s in the cones; an affine row e(x) = c.x + d
        // that must be 0, <= 0 or in the cone becomes A = -c, b = d with s = e(x) (s >= 0
        // for a row e(x) <= 0 is -e(x), so those take A = c, b = -d).
        let mut push = |row: &Affine, sign: f64, b: &mut Vec<f64>| {
            let r = b.len();
            for &(i, c) in &row.terms {
                rows.push(r);
                cols.push(i);
                vals.push(sign * c);
            }
            b.push(-sign * row.constant);
        };
        for row in &self.equalities {
            push(row, 1.0, &mut b);
        }
        for row in &self.inequalities {
            push(row, 1.0, &mut b);
        }
        for cone in &self.cones {
            for row in cone {
                push(row, -1.0, &mut b);
            }
        }
        let m = b.len();
        let a = CscMatrix::new_from_triplets(m, n, rows, cols, vals);
        let (pi, pj, pv) = self.hessian.iter().fold(
            (Vec::new(), Vec::new(), Vec::new()),
            |(mut i, mut j, mut v), &(r, c, x)| {
                i.push(r);
                j.push(c);
                v.push(x);
                (i, j, v)
            },
        );
        let p = CscMatrix::new_from_triplets(n, n, pi, pj, pv);
        let mut cones: Vec<SupportedConeT<f64>> = Vec::new();
        if !self.equalities.is_empty() {
            cones.push(ZeroConeT(self.equalities.len()));
        }
        if !self.inequalities.is_empty() {
            cones.push(NonnegativeConeT(self.inequalities.len()));
        }
        cones.extend(self.cones.iter().map(|_| SecondOrderConeT(3)));
        // Iterative refinement of each KKT solve is off: it doubled the solve time (measured
        // on the thesis's stack), and the static regularization it corrects (1e-8) is far below
        // what the rows need (the gap is 1e-3 cm).
        let settings = DefaultSettings {
            verbose: false,
            iterative_refinement_enable: false,
            ..DefaultSettings::default()
        };
        let mut solver = DefaultSolver::new(&p, &self.linear, &a, &b, &cones, settings)
            .map_err(|e| QpFailure::Unsolved(format!("{e:?}")))?;
        solver.solve();
        match solver.solution.status {
            SolverStatus::Solved | SolverStatus::AlmostSolved => {
                let z = &solver.solution.z;
                let (equal, rest) = z.split_at(self.equalities.len());
                Ok(Solution {
                    x: solver.solution.x.clone(),
                    equality_duals: equal.to_vec(),
                    inequality_duals: rest[..self.inequalities.len()].to_vec(),
                })
            }
            SolverStatus::PrimalInfeasible | SolverStatus::AlmostPrimalInfeasible => {
                Err(QpFailure::Infeasible)
            }
            other => Err(QpFailure::Unsolved(format!("{other:?}"))),
        }
    }

    /// The objective `0.5 x^T P x + q^T x` at `x`.
    pub(crate) fn objective(&self, x: &[f64]) -> f64 {
        let quadratic: f64 = self
            .hessian
            .iter()
            .map(|&(i, j, v)| {
                if i == j {
                    0.5 * v * x[i] * x[i]
                } else {
                    v * x[i] * x[j]
                }
            })
            .sum();
        quadratic + self.linear.iter().zip(x).map(|(q, x)| q * x).sum::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// The optimum of a small dense QP by enumerating active sets: every subset of the
    /// inequalities taken as equalities, the KKT system solved, the feasible point with
    /// non-negative multipliers kept.
    fn dense_reference(
        p: &[Vec<f64>],
        q: &[f64],
        eq: &[(Vec<f64>, f64)],
        le: &[(Vec<f64>, f64)],
    ) -> Option<Vec<f64>> {
        let n = q.len();
        let mut best: Option<(f64, Vec<f64>)> = None;
        for mask in 0..(1u32 << le.len()) {
            let active: Vec<&(Vec<f64>, f64)> = eq
                .iter()
                .chain((0..le.len()).filter(|k| mask >> k & 1 == 1).map(|k| &le[k]))
                .collect();
            let m = active.len();
            let size = n + m;
            let mut a = vec![vec![0.0; size + 1]; size];
            for i in 0..n {
                for j in 0..n {
                    a[i][j] = p[i][j];
                }
                a[i][size] = -q[i];
            }
            for (r, (row, rhs)) in active.iter().enumerate() {
                for j in 0..n {
                    a[n + r][j] = row[j];
                    a[j][n + r] = row[j];
                }
                a[n + r][size] = *rhs;
            }
            let Some(x) = gauss(a) else { continue };
            let feasible = le.iter().all(|(row, rhs)| {
                row.iter().zip(&x).map(|(r, x)| r * x).sum::<f64>() <= rhs + 1e-9
            });
            let multipliers_ok = (eq.len()..m).all(|r| x[n + r] >= -1e-9);
            if feasible && multipliers_ok {
                let f: f64 = (0..n)
                    .map(|i| 0.5 * x[i] * (0..n).map(|j| p[i][j] * x[j]).sum::<f64>() + q[i] * x[i])
                    .sum();
                if best.as_ref().is_none_or(|b| f < b.0) {
                    best = Some((f, x[..n].to_vec()));
                }
            }
        }
        best.map(|b| b.1)
    }

    fn gauss(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
        let n = a.len();
        for c in 0..n {
            let pivot = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
            if a[pivot][c].abs() < 1e-12 {
                return None;
            }
            a.swap(c, pivot);
            for r in 0..n {
                if r != c {
                    let f = a[r][c] / a[c][c];
                    let pivot_row = a[c].clone();
                    for (x, y) in a[r].iter_mut().zip(&pivot_row).skip(c) {
                        *x -= f * y;
                    }
                }
            }
        }
        Some((0..n).map(|i| a[i][n] / a[i][i]).collect())
    }

    #[test]
    fn the_qp_solver_agrees_with_a_dense_reference_and_detects_infeasibility() {
        let mut rng = Rng(17);
        let (mut worst, mut solved): (f64, usize) = (0.0, 0);
        for _ in 0..40 {
            let n = 4;
            let l: Vec<Vec<f64>> = (0..n)
                .map(|_| (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect())
                .collect();
            let p: Vec<Vec<f64>> = (0..n)
                .map(|i| {
                    (0..n)
                        .map(|j| {
                            (0..n).map(|k| l[i][k] * l[j][k]).sum::<f64>()
                                + if i == j { 0.5 } else { 0.0 }
                        })
                        .collect()
                })
                .collect();
            let q: Vec<f64> = (0..n).map(|_| rng.uniform(-3.0, 3.0)).collect();
            let eq = vec![(
                (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect::<Vec<f64>>(),
                rng.uniform(-1.0, 1.0),
            )];
            let le: Vec<(Vec<f64>, f64)> = (0..6)
                .map(|_| {
                    (
                        (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect(),
                        rng.uniform(0.0, 1.0),
                    )
                })
                .collect();
            let mut qp = Qp::new(n);
            for (i, row) in p.iter().enumerate() {
                for (j, &value) in row.iter().enumerate().skip(i) {
                    qp.add_hessian(i, j, value);
                }
            }
            qp.linear.copy_from_slice(&q);
            for (row, rhs) in &eq {
                qp.equal(row.iter().copied().enumerate().collect(), *rhs);
            }
            for (row, rhs) in &le {
                qp.at_most(row.iter().copied().enumerate().collect(), *rhs);
            }
            match dense_reference(&p, &q, &eq, &le) {
                Some(reference) => {
                    solved += 1;
                    let x = qp.solve().expect("solved");
                    for (a, b) in x.iter().zip(&reference) {
                        worst = worst.max((a - b).abs());
                    }
                }
                None => assert_eq!(qp.solve(), Err(QpFailure::Infeasible)),
            }
        }
        assert!(solved > 20, "{solved} feasible problems");
        // Measured: the interior-point solution agrees to 9.3e-8 here.
        assert!(worst < 1e-6, "largest difference {worst}");
        let mut infeasible = Qp::new(2);
        infeasible.add_hessian(0, 0, 1.0);
        infeasible.add_hessian(1, 1, 1.0);
        infeasible.at_least(vec![(0, 1.0), (1, 1.0)], 1.0);
        infeasible.at_most(vec![(0, 1.0)], 0.0);
        infeasible.at_most(vec![(1, 1.0)], 0.0);
        assert_eq!(infeasible.solve(), Err(QpFailure::Infeasible));
    }
}
