//! Edge springs (stretching) as an element family.

use glam::DVec3;

use super::element_family::{permute, ElementFamily, ElementKernel};
use super::materials::Materials;
use super::spring;

/// All edge springs of a simulation, one row per edge (structure of arrays).
///
/// `ends[e]` are global vertex indices; `rest` and `materials` are the spring's rest length
/// (cm), stiffness `k` (dyn) and position-based damping coefficient `c` (g cm/s); see
/// [`spring`] for the potentials.
#[derive(Clone, Debug, Default)]
pub struct SpringKernel {
    /// End vertices.
    pub ends: Vec<[u32; 2]>,
    /// Rest length.
    pub rest: Vec<f64>,
    /// Stiffness `k` and damping coefficient `c`.
    pub materials: Materials,
}

/// The stretching family: springs plus their clocks and damping memory.
pub(crate) type SpringFamily = ElementFamily<2, SpringKernel>;

impl SpringKernel {
    /// Adds a spring between `a` and `b` whose rest length is their distance in `rest_positions`.
    pub(crate) fn push(&mut self, a: u32, b: u32, rest_positions: &[DVec3], k: f64, c: f64) {
        self.ends.push([a, b]);
        self.rest
            .push(rest_positions[a as usize].distance(rest_positions[b as usize]));
        self.materials.push(k, c);
    }

    /// The stable clock of every spring for lumped inverse masses `inv_mass` and safety factor
    /// `safety`.
    pub fn stable_clocks(&self, inv_mass: &[f64], safety: f64) -> Vec<f64> {
        let mass = |i: u32| 1.0 / inv_mass[i as usize];
        (0..self.ends.len())
            .map(|e| {
                let [a, b] = self.ends[e];
                spring::stable_step(
                    mass(a),
                    mass(b),
                    self.rest[e],
                    self.materials.stiffness(e),
                    self.materials.damping(e),
                    safety,
                )
            })
            .collect()
    }
}

impl ElementKernel<2> for SpringKernel {
    #[inline]
    fn len(&self) -> usize {
        self.ends.len()
    }

    #[inline]
    fn stencil(&self, e: usize) -> [u32; 2] {
        self.ends[e]
    }

    fn permuted(&self, order: &[u32]) -> Self {
        Self {
            ends: permute(&self.ends, order),
            rest: permute(&self.rest, order),
            materials: self.materials.permuted(order),
        }
    }

    fn damped(&self) -> bool {
        self.materials.damped()
    }

    #[inline(always)]
    fn tick(&self, e: usize, p: [DVec3; 2], memory: f64, h: f64) -> ([DVec3; 2], f64) {
        spring::tick_impulse(
            p[0],
            p[1],
            self.rest[e],
            self.materials.stiffness(e),
            self.materials.damping(e),
            memory,
            h,
        )
    }

    #[inline]
    fn energy(&self, e: usize, p: [DVec3; 2]) -> f64 {
        spring::energy(p[0], p[1], self.rest[e], self.materials.stiffness(e))
    }

    #[inline]
    fn memory_at(&self, _e: usize, p: [DVec3; 2]) -> f64 {
        p[0].distance(p[1])
    }
}
