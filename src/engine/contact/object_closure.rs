//! Work closure across objects: the elastic work that the pairs' own closure could not take
//! out, taken out of the two objects' motion when they part.
//!
//! The pair closure (`work_closure.rs`) takes a pair's open work out of the pair's own relative
//! normal motion when it leaves its layers. Under load that motion is too small: a stiff ball
//! landing hard presses its lowest vertices through dozens of layers, whose ticks err by more
//! than those few vertices carry when they leave, and contact points that change owner drop
//! their pair's work. This ledger keeps, per pair of distinct objects, the energy that every
//! normal impulse between them has put in since their contact began: the layer ticks, the
//! pairs' closing impulses, and the error each makes in the other forces' ticks. At the tick
//! that finds the last of their pairs outside its outermost layer, every layer potential
//! between the two objects is zero, so with `cor = 1` the ledger is the ticks' error. It is
//! taken out by one impulse, equal and opposite on the two objects at one point, along the net
//! direction of the episode's normal impulses, at their impulse-weighted centre: each object
//! receives it as a rigid body would (a change of its linear and angular velocity, spread over
//! its vertices by mass), so linear and angular momentum are kept to round-off, the energy it
//! removes is exact for a deforming body too, and no clock changes (a discrete velocity update
//! at contact release, after Laursen and Love, IJNME 2002).
//!
//! The impulse keeps the objects parting (their relative velocity at the point, along the
//! direction, keeps its sign); when it cannot, the ledger stays open until the objects next
//! part. Work that is not the potential's drops the ledger: an object with some but not all
//! vertices fixed, or moved by a script, and triangle-pair contact (`speed.triangle_pairs`).
//! A fixed, unmoving object takes no share of the impulse. Contact within one object (self
//! contact) is left to the pair closure.

use glam::{DMat3, DVec3};
use hashbrown::HashMap;

use super::force_phases::ForcePhases;
use crate::model::ObjectRange;
use crate::penalty::impulse::PairImpulse;
use crate::penalty::ContactKey;
use crate::state::VertexState;

/// One contact between two objects: the energy its normal impulses put in, and where and which
/// way they pushed.
#[derive(Clone, Debug, Default)]
struct Episode {
    /// Kinetic energy the normal impulses between the two objects have put in (with their
    /// error in the other forces' ticks).
    work: f64,
    /// Pairs whose last tick found them inside their outermost layer.
    inside: u32,
    /// Sum of the normal impulses on the lower-indexed object's vertices.
    push: DVec3,
    /// Sum of `|J| x` over those impulses `J` at positions `x`, and of `|J|`.
    moment: DVec3,
    weight: f64,
    /// Pair slots (with their keys) that ticked in this episode: their own open work is part
    /// of `work`, and is cleared when the episode closes.
    slots: Vec<(u32, ContactKey)>,
    /// The work is not the potential's (see the module docs).
    dropped: bool,
}

/// The ledger of the contacts between distinct objects (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct ObjectClosure {
    objects: Vec<ObjectRange>,
    /// Thickness of the outermost layer.
    eta1: f64,
    /// Per object pair `(lower, higher)`: its open episode.
    episodes: HashMap<(u32, u32), Episode>,
    /// Per pair slot: whether its last tick found it inside its outermost layer, and whether it
    /// is listed in its episode.
    inside: Vec<bool>,
    listed: Vec<bool>,
    /// Object pairs whose last inside pair left during the current tick, in the order they did.
    parted: Vec<(u32, u32)>,
}

/// What the ledger needs of one pair tick: the pair, its vertices, its impulses, and the
/// energy their normal parts put in (`None`: not the potential's work).
pub(super) struct TickWork<'a> {
    pub(super) slot: u32,
    pub(super) key: ContactKey,
    pub(super) verts: &'a [u32],
    pub(super) tick: &'a PairImpulse<6>,
    pub(super) work: Option<f64>,
}

/// An episode closed on the objects' motion: the pair slots whose own open work it took out,
/// and the impulse on each vertex.
#[derive(Debug, Default)]
pub(super) struct Closing {
    pub(super) slots: Vec<(u32, ContactKey)>,
    pub(super) impulses: Vec<(u32, DVec3)>,
}

/// `(a, b)` lower first, or `None` when they are the same object.
fn ordered(a: u32, b: u32) -> Option<(u32, u32)> {
    (a != b).then_some((a.min(b), a.max(b)))
}

/// What became of an episode whose objects parted.
enum Outcome {
    /// Closed by these impulses on the objects' vertices.
    Closed(Vec<(u32, DVec3)>),
    /// Not now (the impulse could not keep the objects parting): open until they next part.
    Later,
    /// Its work is not the potential's, or neither object can take an impulse: forgotten.
    Dropped,
}

/// How an object takes its share of a closing impulse.
enum Body {
    /// Some or all vertices fixed (and at rest): held by them, it takes none.
    Held,
    /// Every vertex free: takes it as a rigid body.
    Free(RigidMotion),
}

/// An object's mass properties and rigid part of its motion at one time.
struct RigidMotion {
    mass: f64,
    centre: DVec3,
    /// Inverse of the inertia tensor about `centre`.
    inv_inertia: DMat3,
    velocity: DVec3,
    spin: DVec3,
}

impl RigidMotion {
    /// The velocity change of a vertex at `x` per unit impulse `n` at `p`.
    fn unit_change(&self, n: DVec3, p: DVec3, x: DVec3) -> DVec3 {
        let turn = self.inv_inertia * (p - self.centre).cross(n);
        n / self.mass + turn.cross(x - self.centre)
    }

    /// The inverse of the effective mass along `n` at `p`.
    fn inv_effective_mass(&self, n: DVec3, p: DVec3) -> f64 {
        let arm = (p - self.centre).cross(n);
        1.0 / self.mass + arm.dot(self.inv_inertia * arm)
    }

    /// The rigid part of the velocity at `p`.
    fn velocity_at(&self, p: DVec3) -> DVec3 {
        self.velocity + self.spin.cross(p - self.centre)
    }
}

impl ObjectClosure {
    /// An empty ledger for the scene's `objects`, whose outermost layer is `eta1` thick.
    pub(super) fn new(objects: Vec<ObjectRange>, eta1: f64) -> Self {
        Self {
            objects,
            eta1,
            episodes: HashMap::new(),
            inside: Vec::new(),
            listed: Vec::new(),
            parted: Vec::new(),
        }
    }

    /// The object holding vertex `v`.
    fn object_of(&self, v: u32) -> u32 {
        let after = self.objects.partition_point(|o| o.first_vertex <= v);
        after as u32 - 1
    }

    /// The objects of a pair with vertices `verts` (side A's, side B's), lower first, or
    /// `None` within one object.
    fn object_pair(&self, key: ContactKey, verts: &[u32]) -> Option<(u32, u32)> {
        ordered(
            self.object_of(verts[0]),
            self.object_of(verts[key.a_count()]),
        )
    }

    /// Records one pair tick (before its impulses are applied to `state` at `t`).
    pub(super) fn record(&mut self, tick: &TickWork<'_>, state: &VertexState, t: f64) {
        let i = tick.slot as usize;
        let now_inside = tick.tick.distance < self.eta1;
        // A listed pair's idle tick (outside, before and after, and no work) changes nothing:
        // spare it the objects' and the episode's lookups. Layers left late tick idle many
        // times.
        if self.listed.get(i) == Some(&true)
            && !now_inside
            && !self.inside[i]
            && tick.work == Some(0.0)
        {
            return;
        }
        let mut objects = [0; 6];
        for (o, &v) in objects.iter_mut().zip(tick.verts) {
            *o = self.object_of(v);
        }
        let Some((lo, hi)) = ordered(objects[0], objects[tick.key.a_count()]) else {
            return;
        };
        if self.inside.len() <= i {
            self.inside.resize(i + 1, false);
            self.listed.resize(i + 1, false);
        }
        let was_inside = std::mem::replace(&mut self.inside[i], now_inside);
        let list = !std::mem::replace(&mut self.listed[i], true);
        let episode = self.episodes.entry((lo, hi)).or_default();
        if list {
            episode.slots.push((tick.slot, tick.key));
        }
        match tick.work {
            Some(work) if matches!(tick.key, ContactKey::Feature(_)) => episode.work += work,
            _ => episode.dropped = true,
        }
        let normal = tick.tick.normal;
        for ((&v, &j), o) in tick.verts.iter().zip(&tick.tick.impulses).zip(objects) {
            let jn = j.dot(normal);
            if o == lo && jn != 0.0 {
                episode.push += jn * normal;
                episode.moment += jn.abs() * state.position_at(v as usize, t);
                episode.weight += jn.abs();
            }
        }
        match (was_inside, now_inside) {
            (false, true) => episode.inside += 1,
            (true, false) => {
                episode.inside -= 1;
                if episode.inside == 0 {
                    self.parted.push((lo, hi));
                }
            }
            _ => {}
        }
    }

    /// A pair's own closing impulse took `work` out (at the same tick, after [`Self::record`]).
    pub(super) fn closed_by_pair(&mut self, key: ContactKey, verts: &[u32], work: f64) {
        if let Some(pair) = self.object_pair(key, verts) {
            if let Some(episode) = self.episodes.get_mut(&pair) {
                episode.work -= work;
            }
        }
    }

    /// After a tick at `t`: closes the episodes of the object pairs whose last pair left their
    /// layers during it, calling `closed` with each closing (impulses not yet applied).
    pub(super) fn close_parted(
        &mut self,
        state: &VertexState,
        t: f64,
        phases: Option<&ForcePhases>,
        closed: &mut impl FnMut(Closing),
    ) {
        let mut parted = std::mem::take(&mut self.parted);
        for pair in parted.drain(..) {
            let Some(episode) = self.episodes.get(&pair) else {
                continue;
            };
            if episode.inside > 0 {
                continue;
            }
            let outcome = if episode.dropped {
                Outcome::Dropped
            } else if episode.work == 0.0 {
                Outcome::Closed(Vec::new())
            } else {
                self.closing_impulses(pair, episode, state, t, phases)
            };
            if matches!(outcome, Outcome::Later) {
                continue;
            }
            let episode = self.episodes.remove(&pair).expect("looked up above");
            for &(slot, _) in &episode.slots {
                self.listed[slot as usize] = false;
            }
            if let Outcome::Closed(impulses) = outcome {
                closed(Closing {
                    slots: episode.slots,
                    impulses,
                });
            }
        }
        self.parted = parted;
    }

    /// The impulses on the vertices of object pair `(lo, hi)` that take `episode.work` out
    /// (see the module docs).
    fn closing_impulses(
        &self,
        (lo, hi): (u32, u32),
        episode: &Episode,
        state: &VertexState,
        t: f64,
        phases: Option<&ForcePhases>,
    ) -> Outcome {
        let Some(n) = episode.push.try_normalize() else {
            return Outcome::Dropped;
        };
        let p = episode.moment / episode.weight;
        let (Some(lower), Some(higher)) = (self.body(lo, state, t), self.body(hi, state, t)) else {
            return Outcome::Dropped;
        };
        let bodies = [lower, higher];
        // Relative velocity u of the lower object from the higher at p along n, the inverse
        // effective mass K of the two, and the other forces' error e per unit impulse: an
        // impulse lambda n changes the energy by lambda (u + e) + K lambda^2 / 2.
        let (mut u, mut k, mut e) = (0.0, 0.0, 0.0);
        let mut unit = Vec::new();
        for (body, object, sign) in [(&bodies[0], lo, 1.0), (&bodies[1], hi, -1.0)] {
            let Body::Free(rigid) = body else {
                continue;
            };
            u += sign * rigid.velocity_at(p).dot(n);
            k += rigid.inv_effective_mass(n, p);
            for v in self.vertices(object) {
                let i = v as usize;
                let x = state.position_at(i, t);
                let impulse = sign * state.mass[i] * rigid.unit_change(n, p, x);
                e += phases.map_or(0.0, |phases| phases.error(v, impulse, t));
                unit.push((v, impulse));
            }
        }
        if k == 0.0 {
            return Outcome::Dropped;
        }
        let ue = u + e;
        let disc = ue * ue - 2.0 * k * episode.work;
        let lambda = (disc.sqrt() - ue) / k;
        if !(u > 0.0 && ue > 0.0 && k > 0.0 && disc > 0.0 && u + k * lambda > 0.0) {
            return Outcome::Later;
        }
        Outcome::Closed(unit.into_iter().map(|(v, j)| (v, lambda * j)).collect())
    }

    /// The global vertex indices of object `o`.
    fn vertices(&self, o: u32) -> std::ops::Range<u32> {
        let range = &self.objects[o as usize];
        range.first_vertex..range.first_vertex + range.vertex_count
    }

    /// How object `o` takes a closing impulse at `t`; `None` when it cannot (a vertex moved by
    /// a script, or free vertices all on one line, which have no rigid spin).
    fn body(&self, o: u32, state: &VertexState, t: f64) -> Option<Body> {
        let vertices = self.vertices(o);
        let mut fixed = (vertices.clone())
            .filter(|&v| state.inv_mass[v as usize] == 0.0)
            .peekable();
        if fixed.peek().is_some() {
            let still = fixed.all(|v| state.v[v as usize] == DVec3::ZERO);
            return still.then_some(Body::Held);
        }
        let (mut mass, mut moment, mut linear) = (0.0, DVec3::ZERO, DVec3::ZERO);
        for i in vertices.clone().map(|v| v as usize) {
            mass += state.mass[i];
            moment += state.mass[i] * state.position_at(i, t);
            linear += state.mass[i] * state.v[i];
        }
        if mass <= 0.0 {
            return None;
        }
        let (centre, velocity) = (moment / mass, linear / mass);
        let (mut inertia, mut angular) = (DMat3::ZERO, DVec3::ZERO);
        for v in vertices {
            let i = v as usize;
            let r = state.position_at(i, t) - centre;
            let m = state.mass[i];
            inertia += m
                * (DMat3::from_diagonal(DVec3::splat(r.length_squared()))
                    - DMat3::from_cols(r * r.x, r * r.y, r * r.z));
            angular += m * r.cross(state.v[i]);
        }
        let scale = (inertia.x_axis.x + inertia.y_axis.y + inertia.z_axis.z) / 3.0;
        let inv_inertia = if scale == 0.0 {
            // A single vertex: no arm, no spin.
            DMat3::ZERO
        } else if inertia.determinant() > 1e-9 * scale * scale * scale {
            inertia.inverse()
        } else {
            return None;
        };
        Some(Body::Free(RigidMotion {
            mass,
            centre,
            inv_inertia,
            velocity,
            spin: inv_inertia * angular,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::VertexKind;
    use crate::test_rng::Rng;

    /// Two objects of five vertices each, at random positions with random (deforming)
    /// velocities, the lower one moving away from the higher along `+y`; `held` fixes the
    /// higher object's first vertex.
    fn two_objects(rng: &mut Rng, held: bool) -> (ObjectClosure, VertexState) {
        let range = |name: &str, first| ObjectRange {
            name: name.into(),
            first_vertex: first,
            vertex_count: 5,
            first_triangle: 0,
            triangle_count: 0,
        };
        let x: Vec<DVec3> = (0..10)
            .map(|i| rng.vec(1.0) + DVec3::Y * if i < 5 { 1.5 } else { -1.5 })
            .collect();
        let mut v: Vec<DVec3> = (0..10)
            .map(|i| rng.vec(5.0) + DVec3::Y * if i < 5 { 40.0 } else { -40.0 })
            .collect();
        let mass: Vec<f64> = (0..10).map(|_| rng.uniform(0.5, 2.0)).collect();
        let mut inv_mass: Vec<f64> = mass.iter().map(|m| 1.0 / m).collect();
        if held {
            inv_mass[5] = 0.0;
            v[5] = DVec3::ZERO;
        }
        let state = VertexState {
            x,
            t: vec![0.0; 10],
            v,
            mass,
            inv_mass,
            kind: vec![VertexKind::Free; 10],
        };
        let objects = vec![range("a", 0), range("b", 5)];
        (ObjectClosure::new(objects, 0.1), state)
    }

    fn kinetic(state: &VertexState) -> f64 {
        (0..state.len())
            .map(|i| 0.5 * state.mass[i] * state.v[i].length_squared())
            .sum()
    }

    /// Linear and angular momentum about the origin at `t`.
    fn momenta(state: &VertexState, t: f64) -> (DVec3, DVec3) {
        (0..state.len()).fold((DVec3::ZERO, DVec3::ZERO), |(p, l), i| {
            let mv = state.mass[i] * state.v[i];
            (p + mv, l + state.position_at(i, t).cross(mv))
        })
    }

    #[test]
    fn a_closing_takes_out_exactly_the_work_and_keeps_both_momenta() {
        let mut rng = Rng(7);
        for case in 0..20 {
            let (closure, mut state) = two_objects(&mut rng, false);
            let t = 0.01;
            let before = kinetic(&state);
            let (p0, l0) = momenta(&state, t);
            let episode = Episode {
                work: rng.uniform(-0.2, 0.2) * before,
                push: DVec3::new(rng.uniform(-0.3, 0.3), 1.0, rng.uniform(-0.3, 0.3)),
                moment: rng.vec(0.5),
                weight: 1.0,
                ..Episode::default()
            };
            let Outcome::Closed(impulses) =
                closure.closing_impulses((0, 1), &episode, &state, t, None)
            else {
                panic!("case {case}: the objects part, so the work closes");
            };
            assert_eq!(impulses.len(), 10, "a share for every vertex of both");
            for (v, j) in impulses {
                state.apply_impulse(v as usize, t, j);
            }
            let change = kinetic(&state) - before;
            assert!(
                (change + episode.work).abs() < 1e-12 * before,
                "case {case}: kinetic energy changed by {change}, work {}",
                episode.work
            );
            let (p1, l1) = momenta(&state, t);
            let scale = (0..10)
                .map(|i| state.mass[i] * state.v[i].length())
                .sum::<f64>();
            assert!(
                (p1 - p0).length() < 1e-13 * scale,
                "case {case}: {p0} -> {p1}"
            );
            assert!(
                (l1 - l0).length() < 1e-12 * scale,
                "case {case}: {l0} -> {l1}"
            );
        }
    }

    #[test]
    fn a_held_object_takes_no_share_and_a_closing_that_would_turn_the_objects_round_waits() {
        let mut rng = Rng(11);
        let (closure, state) = two_objects(&mut rng, true);
        let before = kinetic(&state);
        let mut episode = Episode {
            work: 0.1 * before,
            push: DVec3::Y,
            moment: DVec3::ZERO,
            weight: 1.0,
            ..Episode::default()
        };
        let Outcome::Closed(impulses) =
            closure.closing_impulses((0, 1), &episode, &state, 0.0, None)
        else {
            panic!("the free object parts from the held one");
        };
        assert!(impulses.iter().all(|&(v, _)| v < 5), "only the free object");
        // More than the free object's motion along y holds: it would have to turn round.
        episode.work = 2.0 * before;
        assert!(matches!(
            closure.closing_impulses((0, 1), &episode, &state, 0.0, None),
            Outcome::Later
        ));
        // Pushed the other way, the objects are approaching along the push: not now either.
        episode.work = 0.1 * before;
        episode.push = -DVec3::Y;
        assert!(matches!(
            closure.closing_impulses((0, 1), &episode, &state, 0.0, None),
            Outcome::Later
        ));
    }
}
