//! The linearized backward-Euler step (Baraff and Witkin 1998; the paper's §3.1): one Newton
//! step with a constant mass matrix,
//!
//! ```text
//! A v = b,   A = M + h C + h^2 K,   b = M v0 + h (f(x0) + f_ext)
//! ```
//!
//! for the velocities `v` at the end of the step (positions `x0 + h v`), where `K` is a
//! positive semi-definite approximation of the elastic Hessian and `C` the damping matrix:
//!
//! - **Edge springs** `V = k (l - L)^2 / 2L`: the exact Hessian
//!   `(k/L) [u u^T + (1 - L/l)(I - u u^T)]` with its transverse term clamped at zero (it is
//!   negative for a compressed spring), so the block is PSD.
//! - **Bending hinges** `V = kb w (theta - theta0)^2`: the Gauss-Newton term
//!   `2 kb w grad(theta) grad(theta)^T`; the curvature term `(theta - theta0) Hess(theta)` is
//!   left out (it is indefinite).
//! - **Damping**: position-based damping with coefficient `c` (impulse `-c (l - l_prev)/L u`
//!   per tick) becomes the viscous force of the same coefficient, `C = (c/L) u u^T` for springs
//!   and `c w grad(theta) grad(theta)^T` for hinges; drag `d m` adds `d m I`.
//!
//! Immovable vertices (fixed or scripted, `inv_mass = 0`) are not unknowns: their velocities over
//! the step are given, and their coupling moves to the right-hand side of the free rows.

use glam::{DMat3, DVec3};

use super::matrix::BlockMatrix;
use crate::forces::bending;
use crate::forces::external::{Drag, PrescribedForce};
use crate::forces::spring;
use crate::forces::{HingeKernel, SpringKernel};

/// The forces of a model, as the implicit step reads them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Forces<'a> {
    /// Edge springs.
    pub springs: &'a SpringKernel,
    /// Bending hinges.
    pub hinges: &'a HingeKernel,
    /// Air drag.
    pub drag: &'a Drag,
    /// Prescribed forces.
    pub prescribed: &'a [PrescribedForce],
    /// Gravity (cm/s^2).
    pub gravity: DVec3,
}

/// `A` and `b` of one step (see the module docs), with which vertices are unknowns.
#[derive(Clone, Debug, Default)]
pub(crate) struct LinearSystem {
    /// `A`; only the rows and columns of free vertices are meaningful.
    pub matrix: BlockMatrix,
    /// `b`, on free vertices (zero on the others).
    pub rhs: Vec<DVec3>,
    /// Per vertex: whether it is an unknown (`inv_mass > 0`).
    pub free: Vec<bool>,
}

impl LinearSystem {
    /// The pattern of the system of `forces` over vertices with inverse masses `inv_mass`.
    pub(crate) fn new(forces: &Forces<'_>, inv_mass: &[f64]) -> Self {
        let stencils = forces
            .springs
            .ends
            .iter()
            .map(|e| &e[..])
            .chain(forces.hinges.verts.iter().map(|e| &e[..]));
        Self {
            matrix: BlockMatrix::new(inv_mass.len(), stencils),
            rhs: vec![DVec3::ZERO; inv_mass.len()],
            free: inv_mass.iter().map(|&w| w > 0.0).collect(),
        }
    }

    /// Assembles the step of length `h` starting at time `t` from positions `x` and velocities
    /// `v` (whose immovable entries are their velocities over the step).
    pub(crate) fn assemble(
        &mut self,
        forces: &Forces<'_>,
        (x, v, mass): (&[DVec3], &[DVec3], &[f64]),
        t: f64,
        h: f64,
    ) {
        let a = &mut self.matrix;
        a.clear();
        for (i, b) in self.rhs.iter_mut().enumerate() {
            *b = if self.free[i] {
                mass[i] * (v[i] + h * forces.gravity)
            } else {
                DVec3::ZERO
            };
            a.add(
                i as u32,
                i as u32,
                DMat3::from_diagonal(DVec3::splat(mass[i])),
            );
        }
        let s = forces.springs;
        for (e, &[p, q]) in s.ends.iter().enumerate() {
            let (rest, k, c) = (s.rest[e], s.materials.stiffness(e), s.materials.damping(e));
            let [g0, g1] = spring::gradient(x[p as usize], x[q as usize], rest, k);
            self.rhs[p as usize] -= h * g0;
            self.rhs[q as usize] -= h * g1;
            let d = x[q as usize] - x[p as usize];
            let l = d.length();
            if l <= 0.0 {
                continue;
            }
            let u = d / l;
            let uu = DMat3::from_cols(u * u.x, u * u.y, u * u.z);
            let transverse = (1.0 - rest / l).max(0.0);
            let hess = (k / rest) * (uu + transverse * (DMat3::IDENTITY - uu));
            let block = h * h * hess + (h * c / rest) * uu;
            a.add(p, p, block);
            a.add(q, q, block);
            a.add(p, q, -block);
            a.add(q, p, -block);
        }
        let b = forces.hinges;
        for (e, verts) in b.verts.iter().enumerate() {
            let p = verts.map(|i| x[i as usize]);
            let rest = &b.rest[e];
            let (w, kb, c) = (
                rest.weight,
                b.materials.stiffness(e),
                b.materials.damping(e),
            );
            let (g, dtheta, softening) =
                bending::gradient_angle_gradient_and_softening(p, rest, kb);
            // Gauss-Newton: the softened hinge's stiffness along its angle gradient.
            let scale = (h * h * 2.0 * kb * w + h * c * w) * softening;
            for r in 0..4 {
                self.rhs[verts[r] as usize] -= h * g[r];
                for col in 0..4 {
                    let (gr, gc) = (dtheta[r], dtheta[col]);
                    let outer = DMat3::from_cols(gr * gc.x, gr * gc.y, gr * gc.z);
                    a.add(verts[r], verts[col], scale * outer);
                }
            }
        }
        for (&i, &coef) in forces.drag.vertices.iter().zip(&forces.drag.coefficient) {
            a.add(i, i, DMat3::from_diagonal(DVec3::splat(h * coef)));
        }
        for f in forces.prescribed.iter().filter(|f| f.active_at(t)) {
            for &i in &f.vertices {
                self.rhs[i as usize] += h * f.force;
            }
        }
        for i in 0..self.rhs.len() {
            if !self.free[i] {
                self.rhs[i] = DVec3::ZERO;
                continue;
            }
            let known: DVec3 = a
                .row(i)
                .filter(|&(j, _)| !self.free[j])
                .map(|(j, blk)| *blk * v[j])
                .sum();
            self.rhs[i] -= known;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forces::spring;
    use crate::implicit::{cg, dense};
    use crate::test_rng::Rng;

    /// The energy gradient of every spring and hinge at `x`.
    fn gradient(s: &SpringKernel, b: &HingeKernel, x: &[DVec3]) -> Vec<DVec3> {
        let mut g = vec![DVec3::ZERO; x.len()];
        for (e, &[p, q]) in s.ends.iter().enumerate() {
            let k = s.materials.stiffness(e);
            let [g0, g1] = spring::gradient(x[p as usize], x[q as usize], s.rest[e], k);
            g[p as usize] += g0;
            g[q as usize] += g1;
        }
        for (e, verts) in b.verts.iter().enumerate() {
            let p = verts.map(|i| x[i as usize]);
            let kb = b.materials.stiffness(e);
            let ge = bending::gradient(p, &b.rest[e], kb);
            for k in 0..4 {
                g[verts[k] as usize] += ge[k];
            }
        }
        g
    }

    /// A 3 x 3 grid of vertices (8 triangles) with springs on every edge and hinges on the
    /// interior edges; rest positions flat in the xz plane with unit spacing.
    fn grid() -> (Vec<DVec3>, SpringKernel, HingeKernel) {
        let rest: Vec<DVec3> = (0..9)
            .map(|i| DVec3::new((i % 3) as f64, 0.0, (i / 3) as f64))
            .collect();
        let mut springs = SpringKernel::default();
        let mut hinges = HingeKernel::default();
        let mut edges = Vec::new();
        for r in 0..2u32 {
            for c in 0..2u32 {
                let (a, b, d, e) = (3 * r + c, 3 * r + c + 1, 3 * r + c + 3, 3 * r + c + 4);
                edges.extend([[a, b], [a, d], [b, d]]);
                // The diagonal b-d is interior to the quad: hinge over triangles (b, d, a) and
                // (d, b, e).
                hinges.push([b, d, a, e], &rest, 0.7, 0.0);
            }
        }
        edges.extend([[2, 5], [5, 8], [6, 7], [7, 8]]);
        for &[a, b] in &edges {
            springs.push(a, b, &rest, 50.0, 0.0);
        }
        // Interior grid edges shared by two quads, with their wings.
        for verts in [[1, 4, 3, 2], [3, 4, 1, 6], [4, 5, 2, 7], [4, 7, 6, 5]] {
            hinges.push(verts, &rest, 0.7, 0.0);
        }
        (rest, springs, hinges)
    }

    /// On a stretched flat sheet (every spring longer than at rest, every hinge at its rest
    /// angle) the PSD approximations are the exact Hessians, so the assembled step equals the
    /// backward-Euler step linearized with a finite-difference Hessian, solved densely. One
    /// immovable vertex with a given velocity checks the coupling moved to the right-hand side.
    /// Measured: the largest difference is 7.4e-13 of the largest velocity; asserted at 1e-9.
    #[test]
    fn unconstrained_step_matches_a_dense_reference_solve() {
        let (rest, springs, hinges) = grid();
        let mut rng = Rng(7);
        let x: Vec<DVec3> = rest.iter().map(|&p| 1.1 * p).collect();
        let v: Vec<DVec3> = (0..9).map(|_| rng.vec(3.0)).collect();
        let mass: Vec<f64> = (0..9).map(|_| rng.uniform(0.5, 1.5)).collect();
        let mut inv_mass: Vec<f64> = mass.iter().map(|m| 1.0 / m).collect();
        inv_mass[0] = 0.0;
        let drag = Drag::default();
        let forces = Forces {
            springs: &springs,
            hinges: &hinges,
            drag: &drag,
            prescribed: &[],
            gravity: DVec3::new(0.0, -981.0, 0.0),
        };
        let h = 0.02;
        let mut system = LinearSystem::new(&forces, &inv_mass);
        system.assemble(&forces, (&x, &v, &mass), 0.0, h);
        let mut solution = v.clone();
        let report = cg::solve(
            &system.matrix,
            &system.rhs,
            &system.free,
            &mut solution,
            1e-13,
            1000,
        );
        assert!(report.relative_residual <= 1e-13, "{report:?}");

        // Reference: A = M + h^2 H over all 27 coordinates, H by central differences.
        let n = 27;
        let eps = 1e-6;
        let mut a = vec![vec![0.0; n]; n];
        for col in 0..n {
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[col / 3][col % 3] += eps;
            xm[col / 3][col % 3] -= eps;
            let (gp, gm) = (
                gradient(&springs, &hinges, &xp),
                gradient(&springs, &hinges, &xm),
            );
            for row in 0..n {
                a[row][col] = h * h * (gp[row / 3][row % 3] - gm[row / 3][row % 3]) / (2.0 * eps);
            }
            a[col][col] += mass[col / 3];
        }
        let g0 = gradient(&springs, &hinges, &x);
        let free: Vec<usize> = (1..9).collect();
        let mut b: Vec<f64> = free
            .iter()
            .flat_map(|&i| (mass[i] * (v[i] + h * forces.gravity) - h * g0[i]).to_array())
            .collect();
        for (r, row) in b.iter_mut().enumerate() {
            *row -= (0..3).map(|q| a[3 + r][q] * v[0][q]).sum::<f64>();
        }
        let a_free: Vec<Vec<f64>> = a[3..].iter().map(|row| row[3..].to_vec()).collect();
        let reference = dense::solve(a_free, b);
        let got = dense::flatten(&solution, &free);
        let scale = reference.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let worst = got
            .iter()
            .zip(&reference)
            .fold(0.0f64, |m, (p, q)| m.max((p - q).abs()));
        assert!(worst <= 1e-9 * scale, "worst {worst:e} of scale {scale:e}");
        assert_eq!(solution[0], v[0], "the immovable vertex keeps its velocity");
    }
}
