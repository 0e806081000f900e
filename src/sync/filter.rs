//! The velocity filter of Bridson, Fedkiw and Anderson (2002) with the fail-safes of thesis
//! ch. 3 (Alg. 1 line 6): given the positions `x` at the start of a step and the velocities `v`
//! the dynamics proposes for it, change `v` so that the linear motion `x + s h v`, `s` in
//! `[0, 1]`, has no collision.
//!
//! 1. **Repulsions**: pairs closer than the thickness at the start get a spring impulse
//!    `k (thickness - d) h`, capped so that their normal relative velocity does not exceed
//!    `0.1 d / h`, plus an inelastic impulse if they approach; with Coulomb friction.
//! 2. **Iterated CCD impulses**: up to `max_ccd_iterations` passes; each finds every collision
//!    of the step ([`super::ccd`]) and applies inelastic impulses (with friction) one collision
//!    at a time, in feature order.
//! 3. **Fail-safe** (Alg. 3): collisions that remain join impact zones (merged through shared
//!    free vertices); each zone is reset to the velocities the fail-safe started from and
//!    resolved as a whole, by rigid impact zones (Alg. 2) or inelastic projection (§3.6-3.7);
//!    repeated until no collision is found, at most `max_failsafe_iterations` times.
//!
//! Collision responses aim at a normal relative velocity that leaves the pair at least a tenth
//! of the thickness apart at the end of the step (linearised), and never less than zero (the
//! inelastic response of the thesis), so a resolved pair is not found again.
//!
//! Everything is deterministic: detection runs in parallel but is collected in feature order,
//! and every response is applied sequentially in that order.

use glam::DVec3;
use hashbrown::HashMap;
use rayon::prelude::*;
use serde::Serialize;

use super::broad;
use super::ccd;
use super::constraint::Constraint;
use super::primitives::{Feature, Primitives};
use super::projection;
use super::zones::{self, UnionFind};
use crate::scene::FailSafe;

/// Repulsions stop pushing once the normal relative velocity reaches this fraction of the
/// distance per step (Bridson et al. 2002, §7.2).
const REPULSION_SPEED_FRACTION: f64 = 0.1;

/// Collision responses target an end-of-step separation of this fraction of the thickness.
const SEPARATION_FRACTION: f64 = 0.1;

/// CCD reports a collision when the primitives come within this fraction of the thickness.
pub(crate) const GAP_FRACTION: f64 = 1e-3;

/// The broad phase is rebuilt when a vertex's motion leaves the box of its motion at the last
/// build by more than this many thicknesses.
const BROAD_PHASE_MARGIN: f64 = 2.0;

/// Parameters of the filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct FilterParams {
    /// Step `h` (s).
    pub step: f64,
    /// Proximity thickness (cm).
    pub thickness: f64,
    /// Repulsion stiffness (dyn/cm).
    pub stiffness: f64,
    /// Friction coefficient.
    pub friction: f64,
    /// Passes of iterated CCD impulses.
    pub max_ccd_iterations: u32,
    /// Rounds of the fail-safe.
    pub max_failsafe_iterations: u32,
    /// The fail-safe.
    pub failsafe: FailSafe,
}

/// Counters of the filter, summed over steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct FilterStats {
    /// Broad-phase builds (at least one per step; more when responses move vertices far).
    pub broad_phase_builds: u64,
    /// Candidate feature pairs, summed over builds.
    pub candidates: u64,
    /// Repulsion impulses applied.
    pub repulsions: u64,
    /// Passes of CCD (stage 2 and fail-safe rounds).
    pub ccd_passes: u64,
    /// Collisions found by CCD passes of stage 2 (summed over passes).
    pub collisions: u64,
    /// Steps that needed the fail-safe.
    pub failsafe_steps: u64,
    /// Fail-safe rounds, summed over steps.
    pub failsafe_rounds: u64,
    /// Most free vertices in one impact zone.
    pub largest_zone: u64,
    /// Conjugate-gradient iterations of inelastic projections.
    pub projection_iterations: u64,
    /// Times (zones times fail-safe rounds) that a rigid impact zone could not be moved because
    /// two of its immovable vertices move differently.
    pub rigid_disagreements: u64,
    /// Steps the fail-safe could not make collision-free.
    pub unresolved_steps: u64,
}

/// A step the fail-safe could not make collision-free.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Unresolved {
    /// Collisions still found.
    pub collisions: usize,
    /// The first of them.
    pub first: Feature,
    /// Why the fail-safe gave up.
    pub reason: String,
}

/// The velocity filter and its scratch state.
#[derive(Debug)]
pub(crate) struct Filter {
    prims: Primitives,
    params: FilterParams,
    gap: f64,
    candidates: Vec<Feature>,
    /// Per vertex, the box of its motion over the step the candidates were built for: they
    /// hold every pair that can come within the thickness while each vertex's motion stays
    /// within `margin` of its box.
    reference: Vec<(DVec3, DVec3)>,
    margin: f64,
    scratch: Vec<DVec3>,
}

impl Filter {
    /// A filter for the triangles of a scene with `vertex_count` vertices.
    pub(crate) fn new(triangles: &[[u32; 3]], vertex_count: usize, params: FilterParams) -> Self {
        Self {
            prims: Primitives::new(triangles, vertex_count),
            params,
            gap: GAP_FRACTION * params.thickness,
            candidates: Vec::new(),
            reference: Vec::new(),
            margin: BROAD_PHASE_MARGIN * params.thickness,
            scratch: vec![DVec3::ZERO; vertex_count],
        }
    }

    /// Filters `v` for positions `x` (the three stages of the module docs).
    pub(crate) fn apply(
        &mut self,
        x: &[DVec3],
        v: &mut [DVec3],
        mass: &[f64],
        inv_mass: &[f64],
        stats: &mut FilterStats,
    ) -> Result<(), Unresolved> {
        self.refresh(x, v, inv_mass, stats);
        self.repulse(x, v, inv_mass, stats);
        for _ in 0..self.params.max_ccd_iterations {
            let hits = self.detect(x, v, inv_mass, stats);
            if hits.is_empty() {
                return Ok(());
            }
            stats.collisions += hits.len() as u64;
            for c in &hits {
                self.impulse(c, x, v, inv_mass);
            }
        }
        self.fail_safe(x, v, mass, inv_mass, stats)
    }

    /// Rebuilds the candidate pairs unless every vertex's motion `x + s h v` stays within the
    /// margin of the box of its motion when they were built.
    fn refresh(&mut self, x: &[DVec3], v: &[DVec3], inv_mass: &[f64], stats: &mut FilterStats) {
        let (h, margin) = (self.params.step, self.margin);
        let inside = |p: DVec3, (lo, hi): (DVec3, DVec3)| {
            p.cmpge(lo - DVec3::splat(margin)).all() && p.cmple(hi + DVec3::splat(margin)).all()
        };
        let valid = self.reference.len() == x.len()
            && x.par_iter()
                .zip(v)
                .zip(&self.reference)
                .all(|((&p, &u), &b)| inside(p, b) && inside(p + h * u, b));
        if valid {
            return;
        }
        let end: Vec<DVec3> = x.iter().zip(v).map(|(&p, &u)| p + h * u).collect();
        self.reference.clear();
        self.reference
            .extend(x.iter().zip(&end).map(|(&p, &q)| (p.min(q), p.max(q))));
        self.candidates = broad::candidates(
            &self.prims,
            x,
            &end,
            0.5 * self.params.thickness + margin,
            inv_mass,
        );
        stats.broad_phase_builds += 1;
        stats.candidates += self.candidates.len() as u64;
    }

    /// Stage 1: repulsions, with friction, in feature order.
    fn repulse(&mut self, x: &[DVec3], v: &mut [DVec3], inv_mass: &[f64], stats: &mut FilterStats) {
        let (h, thickness) = (self.params.step, self.params.thickness);
        let close = proximities(&self.candidates, x, v, h, thickness, self.gap);
        for c in &close {
            let w = c.inverse_mass(inv_mass);
            if w <= 0.0 {
                continue;
            }
            let u = c.relative(v);
            let un = c.normal.dot(u);
            let d = c.distance;
            let ceiling = REPULSION_SPEED_FRACTION * d / h;
            if un >= ceiling {
                continue;
            }
            let inelastic = (-un).max(0.0);
            let spring = (h * self.params.stiffness * (thickness - d) * w)
                .min(ceiling - un.max(0.0))
                .max(0.0);
            let dn = inelastic + spring;
            if dn <= 0.0 {
                continue;
            }
            let delta = dn * c.normal + self.friction_change(u, un, c.normal, dn);
            c.change_relative(delta, v, inv_mass);
            stats.repulsions += 1;
        }
    }

    /// Coulomb friction for a normal change `dn` of the relative velocity `u` (normal part
    /// `un`): the tangential relative velocity shrinks by `mu dn`, at most to zero.
    fn friction_change(&self, u: DVec3, un: f64, n: DVec3, dn: f64) -> DVec3 {
        let mu = self.params.friction;
        if mu <= 0.0 {
            return DVec3::ZERO;
        }
        let tangential = u - un * n;
        let speed = tangential.length();
        if speed <= 0.0 {
            return DVec3::ZERO;
        }
        -(mu * dn).min(speed) / speed * tangential
    }

    /// The normal relative velocity that leaves constraint `c` at least
    /// `SEPARATION_FRACTION * thickness` apart at the end of the step (never negative).
    fn target(&self, c: &Constraint, x: &[DVec3]) -> f64 {
        let want = SEPARATION_FRACTION * self.params.thickness;
        ((want - c.separation(x)) / self.params.step).max(0.0)
    }

    /// Stage 2: one inelastic impulse (with friction) for collision `c`.
    fn impulse(&self, c: &Constraint, x: &[DVec3], v: &mut [DVec3], inv_mass: &[f64]) {
        let u = c.relative(v);
        let un = c.normal.dot(u);
        let target = self.target(c, x);
        if un < target {
            let dn = target - un;
            let delta = dn * c.normal + self.friction_change(u, un, c.normal, dn);
            c.change_relative(delta, v, inv_mass);
        }
    }

    /// Every collision of the motion `x + s h v`, as constraints at the collision time, in
    /// feature order (refreshing the candidates first).
    fn detect(
        &mut self,
        x: &[DVec3],
        v: &[DVec3],
        inv_mass: &[f64],
        stats: &mut FilterStats,
    ) -> Vec<Constraint> {
        let h = self.params.step;
        self.refresh(x, v, inv_mass, stats);
        stats.ccd_passes += 1;
        collisions(&self.candidates, x, v, h, self.gap)
    }

    /// Stage 3: the fail-safe loop (Alg. 3), on its own: makes the motion `x + s h v`
    /// collision-free by impact zones (or inelastic projection), or says why it could not.
    pub(crate) fn fail_safe(
        &mut self,
        x: &[DVec3],
        v: &mut [DVec3],
        mass: &[f64],
        inv_mass: &[f64],
        stats: &mut FilterStats,
    ) -> Result<(), Unresolved> {
        let start = v.to_vec();
        let mut sets = UnionFind::new(v.len());
        let mut known: HashMap<Feature, Constraint> = HashMap::new();
        let mut disagreement = None;
        for _ in 0..self.params.max_failsafe_iterations {
            let hits = self.detect(x, v, inv_mass, stats);
            if hits.is_empty() {
                return Ok(());
            }
            if known.is_empty() {
                stats.failsafe_steps += 1;
            }
            stats.failsafe_rounds += 1;
            for c in &hits {
                known.insert(c.feature, *c);
                let mut free = c
                    .feature
                    .verts
                    .iter()
                    .copied()
                    .filter(|&i| inv_mass[i as usize] > 0.0);
                if let Some(first) = free.next() {
                    for other in free {
                        sets.union(first, other);
                    }
                }
            }
            let mut all: Vec<Constraint> = known.values().copied().collect();
            all.sort_unstable_by_key(|c| c.feature);
            for zone in zones::group(&all, &mut sets, inv_mass) {
                stats.largest_zone = stats.largest_zone.max(zone.free.len() as u64);
                for &i in &zone.free {
                    v[i as usize] = start[i as usize];
                }
                match self.params.failsafe {
                    FailSafe::ImpactZones => {
                        if let Err(d) = zones::rigidify(&zone, x, v, mass, inv_mass) {
                            stats.rigid_disagreements += 1;
                            disagreement.get_or_insert(d);
                        }
                    }
                    FailSafe::InelasticProjection => {
                        let targets: Vec<f64> =
                            zone.constraints.iter().map(|c| self.target(c, x)).collect();
                        let report = projection::project(
                            &zone.constraints,
                            &targets,
                            self.params.friction,
                            v,
                            inv_mass,
                            &mut self.scratch,
                        );
                        stats.projection_iterations += u64::from(report.iterations);
                    }
                }
            }
        }
        let hits = self.detect(x, v, inv_mass, stats);
        let Some(first) = hits.first() else {
            return Ok(());
        };
        stats.unresolved_steps += 1;
        let reason = match disagreement {
            Some(d) => format!(
                "a rigid impact zone holds immovable vertices {} and {} that move differently, \
                 so no rigid motion exists (thesis §3.1)",
                d.vertices[0], d.vertices[1]
            ),
            None => format!(
                "the fail-safe did not converge in {} rounds",
                self.params.max_failsafe_iterations
            ),
        };
        Err(Unresolved {
            collisions: hits.len(),
            first: first.feature,
            reason,
        })
    }
}

/// The pairs of `candidates` closer than `thickness` at positions `x`, as constraints at `x`
/// (oriented against the motion `h v` where level), in candidate order.
pub(crate) fn proximities(
    candidates: &[Feature],
    x: &[DVec3],
    v: &[DVec3],
    h: f64,
    thickness: f64,
    gap: f64,
) -> Vec<Constraint> {
    candidates
        .par_iter()
        .filter_map(|&f| {
            let p = f.verts.map(|i| x[i as usize]);
            if f.kind.distance(&p) >= thickness {
                return None;
            }
            let disp = f.verts.map(|i| h * v[i as usize]);
            Some(Constraint::new(f, p, p, disp, gap))
        })
        .collect()
}

/// Every collision (coming within `gap`) of the motion `x + s h v`, `s` in `[0, 1]`, among
/// `candidates`, as constraints at the collision time, in candidate order.
pub(crate) fn collisions(
    candidates: &[Feature],
    x: &[DVec3],
    v: &[DVec3],
    h: f64,
    gap: f64,
) -> Vec<Constraint> {
    candidates
        .par_iter()
        .filter_map(|&f| {
            let start = f.verts.map(|i| x[i as usize]);
            let disp = f.verts.map(|i| h * v[i as usize]);
            let s = ccd::first_contact(f.kind, start, disp, gap)?;
            let p = std::array::from_fn(|k| start[k] + s * disp[k]);
            Some(Constraint::new(f, p, start, disp, gap))
        })
        .collect()
}
