//! Discrete-shell bending hinges as an element family.

use glam::DVec3;

use super::bending;
use super::element_family::{permute, ElementFamily, ElementKernel};
use super::materials::Materials;

/// All bending hinges of a simulation, one row per interior edge (structure of arrays).
///
/// `verts[e]` is the hinge `[edge start, edge end, wing of first triangle, wing of second]` in
/// global vertex indices; `rest[e]` its rest angle, weight and wing heights; `materials` the
/// stiffness `k_b` (erg) and damping `c` (erg s); see [`bending`].
#[derive(Clone, Debug, Default)]
pub struct HingeKernel {
    /// Hinge vertices.
    pub verts: Vec<[u32; 4]>,
    /// Rest shapes.
    pub rest: Vec<bending::HingeRest>,
    /// Bending stiffness `k_b` and damping coefficient `c`.
    pub materials: Materials,
}

/// The bending family: hinges plus their clocks and damping memory.
pub(crate) type HingeFamily = ElementFamily<4, HingeKernel>;

impl HingeKernel {
    /// Adds a hinge whose rest shape is taken from `rest_positions`.
    pub(crate) fn push(&mut self, verts: [u32; 4], rest_positions: &[DVec3], kb: f64, c: f64) {
        self.verts.push(verts);
        self.rest.push(bending::HingeRest::of(
            verts.map(|i| rest_positions[i as usize]),
        ));
        self.materials.push(kb, c);
    }

    /// The stable clock of every hinge, evaluated at the rest shape `rest_positions`.
    pub fn stable_clocks(
        &self,
        rest_positions: &[DVec3],
        inv_mass: &[f64],
        safety: f64,
    ) -> Vec<f64> {
        (0..self.verts.len())
            .map(|e| {
                let v = self.verts[e];
                bending::stable_step(
                    v.map(|i| rest_positions[i as usize]),
                    v.map(|i| inv_mass[i as usize]),
                    self.rest[e].weight,
                    self.materials.stiffness(e),
                    self.materials.damping(e),
                    safety,
                )
            })
            .collect()
    }
}

impl ElementKernel<4> for HingeKernel {
    #[inline]
    fn len(&self) -> usize {
        self.verts.len()
    }

    #[inline]
    fn stencil(&self, e: usize) -> [u32; 4] {
        self.verts[e]
    }

    fn permuted(&self, order: &[u32]) -> Self {
        Self {
            verts: permute(&self.verts, order),
            rest: permute(&self.rest, order),
            materials: self.materials.permuted(order),
        }
    }

    fn damped(&self) -> bool {
        self.materials.damped()
    }

    #[inline(always)]
    fn tick(&self, e: usize, p: [DVec3; 4], memory: f64, h: f64) -> ([DVec3; 4], f64) {
        bending::tick_impulse(
            p,
            &self.rest[e],
            self.materials.stiffness(e),
            self.materials.damping(e),
            memory,
            h,
        )
    }

    #[inline]
    fn energy(&self, e: usize, p: [DVec3; 4]) -> f64 {
        bending::energy(p, &self.rest[e], self.materials.stiffness(e))
    }

    #[inline]
    fn memory_at(&self, _e: usize, p: [DVec3; 4]) -> f64 {
        bending::signed_angle(p[0], p[1], p[2], p[3])
    }
}
