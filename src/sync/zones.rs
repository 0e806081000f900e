//! Impact zones (thesis Alg. 3): collisions grouped by shared free vertices, and the rigid
//! impact-zone fail-safe (Alg. 2; Provot 1997, Bridson et al. 2002).

use glam::{DMat3, DVec3};

use super::constraint::Constraint;

/// Disjoint sets over vertex indices, with path halving and union by smaller root index (so the
/// representative of a set is a pure function of the unions made, in any order).
#[derive(Clone, Debug, Default)]
pub(crate) struct UnionFind {
    parent: Vec<u32>,
}

impl UnionFind {
    /// `n` singleton sets.
    pub(crate) fn new(n: usize) -> Self {
        Self {
            parent: (0..n as u32).collect(),
        }
    }

    /// The representative of `i`'s set: its smallest member.
    pub(crate) fn find(&mut self, mut i: u32) -> u32 {
        while self.parent[i as usize] != i {
            let grand = self.parent[self.parent[i as usize] as usize];
            self.parent[i as usize] = grand;
            i = grand;
        }
        i
    }

    /// Merges the sets of `a` and `b`.
    pub(crate) fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = (ra.min(rb), ra.max(rb));
            self.parent[hi as usize] = lo;
        }
    }
}

/// One impact zone: its free vertices (sorted) and its constraints (sorted by feature).
#[derive(Clone, Debug, Default)]
pub(crate) struct Zone {
    /// Free vertices of the zone.
    pub free: Vec<u32>,
    /// Collisions (constraints) of the zone.
    pub constraints: Vec<Constraint>,
}

/// Groups `constraints` (sorted by feature) into zones of the sets in `sets`, keyed by their
/// representative; zones come out ordered by representative. Only free vertices
/// (`inv_mass > 0`) join zones.
pub(crate) fn group(
    constraints: &[Constraint],
    sets: &mut UnionFind,
    inv_mass: &[f64],
) -> Vec<Zone> {
    let mut keyed: Vec<(u32, usize)> = Vec::with_capacity(constraints.len());
    for (i, c) in constraints.iter().enumerate() {
        let free = c
            .feature
            .verts
            .iter()
            .copied()
            .find(|&v| inv_mass[v as usize] > 0.0);
        if let Some(v) = free {
            keyed.push((sets.find(v), i));
        }
    }
    keyed.sort_unstable();
    let mut zones: Vec<Zone> = Vec::new();
    let mut current = u32::MAX;
    for (root, i) in keyed {
        if root != current {
            zones.push(Zone::default());
            current = root;
        }
        let zone = zones.last_mut().expect("pushed above");
        let c = constraints[i];
        zone.constraints.push(c);
        zone.free.extend(
            c.feature
                .verts
                .iter()
                .copied()
                .filter(|&v| inv_mass[v as usize] > 0.0),
        );
    }
    for z in &mut zones {
        z.free.sort_unstable();
        z.free.dedup();
    }
    zones
}

/// Why a rigid impact zone could not be formed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Disagreement {
    /// Two immovable vertices of the zone whose prescribed velocities differ.
    pub vertices: [u32; 2],
}

/// Rigid impact zone (Alg. 2): replaces the velocities of the zone's free vertices by the rigid
/// motion (centre-of-mass velocity plus rotation) with the same linear and angular momentum
/// about the centre of mass at positions `x`.
///
/// Immovable vertices (fixed or scripted) have infinite mass: they dominate the zone, which
/// then moves with their velocity; if two of them move differently no rigid motion exists
/// (thesis §3.1) and the zone is left unchanged.
pub(crate) fn rigidify(
    zone: &Zone,
    x: &[DVec3],
    v: &mut [DVec3],
    mass: &[f64],
    inv_mass: &[f64],
) -> Result<(), Disagreement> {
    let mut pinned: Option<(u32, DVec3)> = None;
    for c in &zone.constraints {
        for &i in &c.feature.verts {
            if inv_mass[i as usize] > 0.0 {
                continue;
            }
            match pinned {
                None => pinned = Some((i, v[i as usize])),
                Some((j, u)) if u != v[i as usize] => {
                    return Err(Disagreement {
                        vertices: [j.min(i), j.max(i)],
                    })
                }
                Some(_) => {}
            }
        }
    }
    if let Some((_, u)) = pinned {
        for &i in &zone.free {
            v[i as usize] = u;
        }
        return Ok(());
    }
    let total: f64 = zone.free.iter().map(|&i| mass[i as usize]).sum();
    let centre = zone
        .free
        .iter()
        .map(|&i| mass[i as usize] * x[i as usize])
        .sum::<DVec3>()
        / total;
    let velocity = zone
        .free
        .iter()
        .map(|&i| mass[i as usize] * v[i as usize])
        .sum::<DVec3>()
        / total;
    let mut momentum = DVec3::ZERO;
    let mut inertia = DMat3::ZERO;
    for &i in &zone.free {
        let (m, r) = (mass[i as usize], x[i as usize] - centre);
        momentum += m * r.cross(v[i as usize] - velocity);
        inertia += m
            * (DMat3::from_diagonal(DVec3::splat(r.length_squared()))
                - DMat3::from_cols(r * r.x, r * r.y, r * r.z));
    }
    let omega = solve_inertia(inertia, momentum);
    for &i in &zone.free {
        v[i as usize] = velocity + omega.cross(x[i as usize] - centre);
    }
    Ok(())
}

/// `I^-1 L`, with the inertia regularised when it is (nearly) singular: a collinear zone has no
/// inertia about its axis, and no angular momentum about it either.
fn solve_inertia(inertia: DMat3, momentum: DVec3) -> DVec3 {
    let trace = inertia.x_axis.x + inertia.y_axis.y + inertia.z_axis.z;
    if trace <= 0.0 {
        return DVec3::ZERO;
    }
    let scale = trace / 3.0;
    let regular = if inertia.determinant().abs() > 1e-9 * scale * scale * scale {
        inertia
    } else {
        inertia + DMat3::from_diagonal(DVec3::splat(1e-12 * trace))
    };
    let omega = regular.inverse() * momentum;
    if omega.is_finite() {
        omega
    } else {
        DVec3::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::ccd::Kind;
    use crate::sync::primitives::Feature;

    fn constraint(verts: [u32; 4]) -> Constraint {
        Constraint {
            feature: Feature {
                kind: Kind::VertexTriangle,
                verts,
            },
            weights: [1.0, -0.2, -0.3, -0.5],
            normal: DVec3::Y,
            distance: 0.0,
        }
    }

    fn zone(constraints: Vec<Constraint>, inv_mass: &[f64]) -> Zone {
        let mut sets = UnionFind::new(inv_mass.len());
        for c in &constraints {
            for &v in &c.feature.verts[1..] {
                sets.union(c.feature.verts[0], v);
            }
        }
        group(&constraints, &mut sets, inv_mass).remove(0)
    }

    #[test]
    fn rigid_zone_keeps_linear_and_angular_momentum_and_moves_rigidly() {
        let x = [
            DVec3::new(0.0, 1.0, 0.0),
            DVec3::new(-1.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.3),
            DVec3::new(0.0, 0.2, 1.0),
        ];
        let mut v = vec![
            DVec3::new(0.0, -3.0, 0.5),
            DVec3::new(1.0, 2.0, 0.0),
            DVec3::new(-0.5, 0.0, 1.0),
            DVec3::new(0.2, 0.3, -1.0),
        ];
        let mass = [1.0, 2.0, 0.5, 1.5];
        let inv_mass = mass.map(|m| 1.0 / m);
        let momenta = |v: &[DVec3]| {
            let p: DVec3 = (0..4).map(|i| mass[i] * v[i]).sum();
            let l: DVec3 = (0..4).map(|i| mass[i] * x[i].cross(v[i])).sum();
            (p, l)
        };
        let before = momenta(&v);
        let z = zone(vec![constraint([0, 1, 2, 3])], &inv_mass);
        rigidify(&z, &x, &mut v, &mass, &inv_mass).unwrap();
        let after = momenta(&v);
        assert!((after.0 - before.0).length() < 1e-12);
        assert!(
            (after.1 - before.1).length() < 1e-12,
            "{after:?} {before:?}"
        );
        // Rigid: every pairwise relative velocity is perpendicular to the pair's offset.
        for i in 0..4 {
            for j in 0..4 {
                assert!((v[i] - v[j]).dot(x[i] - x[j]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn immovable_vertices_dominate_or_disagree() {
        let x = [DVec3::Y, DVec3::X, DVec3::Z, DVec3::ZERO];
        let mass = [1.0; 4];
        let inv_mass = [1.0, 0.0, 0.0, 0.0];
        let mut v = vec![DVec3::new(0.0, -5.0, 0.0), DVec3::X, DVec3::X, DVec3::X];
        let z = zone(vec![constraint([0, 1, 2, 3])], &inv_mass);
        rigidify(&z, &x, &mut v, &mass, &inv_mass).unwrap();
        assert_eq!(v[0], DVec3::X, "the free vertex moves with the obstacle");
        v[3] = DVec3::ZERO;
        assert_eq!(
            rigidify(&z, &x, &mut v, &mass, &inv_mass),
            Err(Disagreement { vertices: [1, 3] })
        );
    }
}
