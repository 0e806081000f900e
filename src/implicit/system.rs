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
pub struct Forces<'a> {
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
pub struct LinearSystem {
    /// `A`; only the rows and columns of free vertices are meaningful.
    pub matrix: BlockMatrix,
    /// `b`, on free vertices (zero on the others).
    pub rhs: Vec<DVec3>,
    /// Per vertex: whether it is an unknown (`inv_mass > 0`).
    pub free: Vec<bool>,
}

impl LinearSystem {
    /// The pattern of the system of `forces` over vertices with inverse masses `inv_mass`.
    pub fn new(forces: &Forces<'_>, inv_mass: &[f64]) -> Self {
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
    pub fn assemble(
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
            let (w, kb, c) = (
                b.weight[e],
                b.materials.stiffness(e),
                b.materials.damping(e),
            );
            let g = bending::gradient(p, b.rest_angle[e], w, kb);
            let dtheta = bending::angle_gradient(p[0], p[1], p[2], p[3]);
            let scale = h * h * 2.0 * kb * w + h * c * w;
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
