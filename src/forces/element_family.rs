//! A family of elastic elements ticked as AVI force events.

use glam::DVec3;
use rayon::prelude::*;

use crate::mesh::Csr;
use crate::state::VertexState;

/// Minimum number of elements (or vertices) per rayon task: below this, splitting costs more
/// than it saves.
const PAR_MIN_LEN: usize = 2048;

/// The physics of one kind of element with `N` vertices, over a structure-of-arrays parameter table.
///
/// Implementations are pure: they read positions and parameters and return impulses, so a family can
/// be ticked in parallel and summed in a fixed order.
pub trait ElementKernel<const N: usize>: Sync {
    /// Number of elements.
    fn len(&self) -> usize;
    /// Whether the table is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The vertices of element `e`, in the order the kernel expects.
    fn stencil(&self, e: usize) -> [u32; N];
    /// Impulses of one tick of length `h` for element `e` at positions `p`, given the damping
    /// memory `memory` (the element's length or angle at its previous tick). Returns the impulses
    /// and the new memory value.
    fn tick(&self, e: usize, p: [DVec3; N], memory: f64, h: f64) -> ([DVec3; N], f64);
    /// Elastic potential energy of element `e` at positions `p`.
    fn energy(&self, e: usize, p: [DVec3; N]) -> f64;
    /// The damping memory of element `e` at positions `p` (its current length or angle).
    fn memory_at(&self, e: usize, p: [DVec3; N]) -> f64;

    /// Each vertex's inverse mass times the number of elements of this family that touch it:
    /// the inverse of the vertex's *mass share* when its lumped mass is split evenly among them.
    ///
    /// Stable clocks computed per element with these shares are stable for the assembled family:
    /// the largest eigenvalue of an assembled system is bounded by the largest element eigenvalue
    /// when the mass matrix is the sum of the element mass matrices (the element-by-element
    /// bound; Hughes, *The Finite Element Method*, §9.3). With whole lumped masses instead, a
    /// vertex shared by six springs can be kicked six times too hard, and the run diverges.
    fn inverse_mass_shares(&self, inv_mass: &[f64]) -> Vec<f64> {
        let mut shares = inv_mass.to_vec();
        let mut valence = vec![0u32; inv_mass.len()];
        for e in 0..self.len() {
            for v in self.stencil(e) {
                valence[v as usize] += 1;
            }
        }
        for (w, n) in shares.iter_mut().zip(valence) {
            *w *= f64::from(n.max(1));
        }
        shares
    }
}

/// A table of elements plus everything needed to tick it: damping memory, per-element stable
/// clocks, and the vertex -> element-slot map used to sum impulses in a fixed order.
///
/// Layout: `memory` and `clocks` are parallel to the kernel's element arrays. `impulses` is scratch
/// holding `N` impulses per element (flattened, element-major) between the parallel compute pass
/// and the per-vertex gather pass; `gather` lists, for every vertex, the flat slots `e * N + k` that
/// touch it in increasing order, so each vertex's sum has the same order on any number of threads.
#[derive(Debug)]
pub struct ElementFamily<const N: usize, K> {
    /// The element parameters and physics.
    pub kernel: K,
    /// Per element: its length or angle at its previous tick (position-based damping).
    pub memory: Vec<f64>,
    /// Per element: the largest stable clock.
    pub clocks: Vec<f64>,
    gather: Csr,
    impulses: Vec<DVec3>,
}

impl<const N: usize, K: ElementKernel<N>> ElementFamily<N, K> {
    /// Builds a family over `kernel` for `vertex_count` vertices, with damping memory initialised
    /// from `positions` (so the first tick has no damping) and the given per-element clocks.
    pub fn new(kernel: K, clocks: Vec<f64>, positions: &[DVec3], vertex_count: usize) -> Self {
        debug_assert_eq!(clocks.len(), kernel.len());
        let memory = (0..kernel.len())
            .map(|e| kernel.memory_at(e, gather_positions(positions, kernel.stencil(e))))
            .collect();
        let pairs = (0..kernel.len()).flat_map(|e| {
            let stencil = kernel.stencil(e);
            (0..N).map(move |k| (stencil[k], (e * N + k) as u32))
        });
        let gather = Csr::from_pairs(vertex_count, pairs);
        let impulses = vec![DVec3::ZERO; kernel.len() * N];
        Self {
            kernel,
            memory,
            clocks,
            gather,
            impulses,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.kernel.len()
    }

    /// Whether the family has no elements.
    pub fn is_empty(&self) -> bool {
        self.kernel.is_empty()
    }

    /// The smallest element clock (the super-element clock), or `None` for an empty family.
    pub fn min_clock(&self) -> Option<f64> {
        self.clocks.iter().copied().reduce(f64::min)
    }

    /// Ticks every element at time `t` with clock `h` (one super-element event).
    ///
    /// `positions` must hold every vertex's position at `t`. Impulses are computed in parallel per
    /// element, then summed per vertex in slot order and applied; a vertex whose velocity does not
    /// change is not written.
    pub fn tick_all(&mut self, t: f64, h: f64, positions: &[DVec3], state: &mut VertexState) {
        let kernel = &self.kernel;
        self.impulses
            .par_chunks_mut(N)
            .zip(self.memory.par_iter_mut())
            .enumerate()
            .with_min_len(PAR_MIN_LEN)
            .for_each(|(e, (out, memory))| {
                let p = gather_positions(positions, kernel.stencil(e));
                let (impulse, next) = kernel.tick(e, p, *memory, h);
                out.copy_from_slice(&impulse);
                *memory = next;
            });
        let gather = &self.gather;
        let impulses = &self.impulses;
        state.kick_all(t, |i, inv_mass| {
            let sum = gather
                .row(i)
                .iter()
                .fold(DVec3::ZERO, |acc, &s| acc + impulses[s as usize]);
            inv_mass * sum
        });
    }

    /// Ticks the single element `e` at time `t` with clock `h` (one classic AVI event).
    pub fn tick_one(&mut self, e: usize, t: f64, h: f64, state: &mut VertexState) {
        let stencil = self.kernel.stencil(e);
        let p = stencil.map(|i| state.position_at(i as usize, t));
        let (impulse, next) = self.kernel.tick(e, p, self.memory[e], h);
        self.memory[e] = next;
        for (&i, &imp) in stencil.iter().zip(&impulse) {
            state.apply_impulse(i as usize, t, imp);
        }
    }

    /// Total elastic energy of the family at `positions`, summed in a fixed order.
    pub fn energy(&self, positions: &[DVec3]) -> f64 {
        let kernel = &self.kernel;
        let chunk_sums: Vec<f64> = (0..kernel.len())
            .into_par_iter()
            .chunks(PAR_MIN_LEN)
            .map(|es| {
                es.into_iter()
                    .map(|e| kernel.energy(e, gather_positions(positions, kernel.stencil(e))))
                    .sum()
            })
            .collect();
        chunk_sums.iter().sum()
    }
}

/// Reads the positions of a stencil.
#[inline]
fn gather_positions<const N: usize>(positions: &[DVec3], stencil: [u32; N]) -> [DVec3; N] {
    stencil.map(|i| positions[i as usize])
}
