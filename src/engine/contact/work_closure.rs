//! Work closure of fully elastic contact (`contact.work_closure`).
//!
//! With `cor = 1` a pair's layers are one conservative potential of its four vertices, zero
//! whenever the pair is outside its outermost layer (`d >= eta(1)`). Between two moments at
//! which it is outside, the exact layers therefore do no net work on the pair. The layer ticks
//! do: each layer crossed between two ticks of its clock adds an error of order `(h omega)^2`
//! of the pair's kinetic energy, random in sign, and a scene that keeps bouncing compounds it
//! into a runaway (README, known limitations).
//!
//! The closure keeps, per pair, the kinetic energy its normal impulses have put into its free
//! vertices since it was last found outside (each vertex's `J . v + |J|^2 / (2 m)`, with `v`
//! its velocity just before, in the order the impulses are applied: exact). At every layer tick
//! that finds the pair outside its outermost layer, that energy is exactly the ticks' error, and
//! the pair gets one more normal impulse, along its closest-point normal with its closest-point
//! weights, that takes it back out (or puts it back). The impulse is applied at a tick of a
//! layer clock, is equal and opposite on the two sides with lever parallel to the normal
//! (momentum and angular momentum conserved to round-off), and keeps the sign of the pair's
//! relative normal velocity; it never changes a clock. Friction's tangential impulses are not
//! counted: their work is meant.
//!
//! With `contact.closure_forces` (the default) the open work also counts the error each normal
//! impulse makes in the ticks of the other forces on its vertices (springs, hinges, gravity,
//! prescribed forces): a kick between two of a force's ticks puts the force's ticks out of step
//! with its potential by `f . dv (s - h/2)` (`force_phases.rs`). The closing impulse counts its
//! own share of that error too. Springs on clocks much longer than an impact otherwise gain or
//! lose up to `|f| |dv| h / 2` an impact, which the layers' closure alone leaves in.
//!
//! The work is not the potential's, and is dropped at the next tick outside, when a feature
//! pair did not own its contact point at a tick inside a layer (another pair acted for it,
//! `owners.rs`), when a vertex was moved by a script (it does work on the pair), and for
//! triangle-pair contact (`speed.triangle_pairs`). Work that one impulse cannot take out
//! without turning the pair's normal motion round stays for a later tick (with
//! `0 < cor < 1` it is dropped: see below).
//!
//! With `contact.closure_objects` (the default) the work of every normal impulse between two
//! distinct objects is also kept per pair of objects, and what the pairs leave open is taken
//! out of the two objects' motion when the last of their pairs leaves its layers
//! (`object_closure.rs`).
//!
//! With `0 < cor < 1` the layers are stiff `r` while a pair approaches and `cor r` while it
//! separates (restitution by biphasic stiffness): the exact layers take out a share `1 - cor`
//! of the energy they store, and only with `contact.closure_restitution` is that closed too.
//! The work the exact layers would have done is then counted from the pair's distance at its
//! ticks (the layers' potential `U` at each: `U(d_0) - U(d_1)` between two ticks that find it
//! deeper, `cor (U(d_0) - U(d_1))` between two that find it shallower) and the ledger keeps
//! the ticks' work less that. Between kicks a pair moves at constant velocity, so it turns at
//! a tick, and the exact layers would have stored all the energy it came in with: its normal
//! kinetic energy `K_-` there, its layers' energy `U(d)`, less the error of its ticks so far
//! (the open work). That tick adds `(1 - cor) (K_- - error)` to the loss, so the episode's
//! is `(1 - cor)` of the energy it came in with, as the exact layers'. A pair that turns
//! back and forth inside its layers (resting, or pressed by other forces) counts, at each
//! turn inwards, only the error since its last turn outwards (its top); the kinetic energy
//! it still had at a top is not counted. Work that one impulse cannot take out is dropped
//! rather than kept for the pair's next episode: whether the pair is still a candidate pair
//! by then depends on the broad phase, and the motion must not. `cor = 0` is left to the ticks: its separating
//! ticks push nothing, so they cannot be told from the ticks of a pair that does not own its
//! contact point.

use glam::DVec3;

use super::force_phases::ForcePhases;
use super::object_closure::{ObjectClosure, TickWork};
use crate::model::ObjectRange;
use crate::penalty::closest::{edge_edge, vertex_triangle};
use crate::penalty::impulse::PairImpulse;
use crate::penalty::layers::LayerSchedule;
use crate::penalty::{ContactKey, PairKey};
use crate::state::VertexState;

/// The open episodes' work, per candidate pair slot.
#[derive(Clone, Debug)]
pub(super) struct WorkClosure {
    /// Whether episodes are closed at all (`contact.work_closure` and `cor = 1`).
    enabled: bool,
    /// Kinetic energy the pair's normal impulses have put in since its episode began.
    work: Vec<f64>,
    /// Whether the episode's work is still the potential's (see the module docs).
    open: Vec<bool>,
    /// The pair each slot's work belongs to.
    key: Vec<Option<ContactKey>>,
    /// With `contact.closure_forces`: the other forces' last ticks, to count the error each
    /// normal impulse makes in them (`force_phases.rs`) as the pair's work too.
    phases: Option<ForcePhases>,
    /// With `0 < cor < 1` (`contact.closure_restitution`): the layers and the coefficient,
    /// to count the work the exact layers would have done (see the module docs).
    restitution: Option<(LayerSchedule, f64)>,
    /// Per slot, with `restitution`: the pair's distance at its last tick (infinite before
    /// its first: outside every layer).
    last_distance: Vec<f64>,
    /// Per slot, with `restitution`: the open work when the pair last turned from separating
    /// to approaching inside its layers (0 at the start of an episode).
    top_error: Vec<f64>,
    /// With `contact.closure_objects`: the work left open, closed when two objects part
    /// (`object_closure.rs`).
    objects: Option<ObjectClosure>,
}

impl WorkClosure {
    /// Closure on or off: on for `setting` and `cor == 1`, and for `setting` and
    /// `restitution` and `0 < cor < 1`, with the layers `schedule`.
    pub(super) fn new(setting: bool, cor: f64, restitution: bool, schedule: LayerSchedule) -> Self {
        let partial = restitution && cor > 0.0 && cor < 1.0;
        Self {
            enabled: setting && (cor == 1.0 || partial),
            restitution: partial.then_some((schedule, cor)),
            last_distance: Vec::new(),
            top_error: Vec::new(),
            work: Vec::new(),
            open: Vec::new(),
            key: Vec::new(),
            phases: None,
            objects: None,
        }
    }

    /// From now on, with `cor = 1`, closes what the pairs leave open when two of `objects`
    /// part, the outermost layer being `eta1` thick (`contact.closure_objects`,
    /// `object_closure.rs`).
    pub(super) fn close_across_objects(&mut self, objects: Vec<ObjectRange>, eta1: f64) {
        if self.enabled && self.restitution.is_none() {
            self.objects = Some(ObjectClosure::new(objects, eta1));
        }
    }

    /// Whether episodes are closed.
    pub(super) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Counts, from now on, the error each normal impulse makes in the ticks of the forces
    /// that `phases` follows.
    pub(super) fn follow_forces(&mut self, phases: ForcePhases) {
        self.phases = Some(phases);
    }

    /// The other forces' last ticks, if followed.
    pub(super) fn phases(&mut self) -> Option<&mut ForcePhases> {
        self.phases.as_mut()
    }

    /// The error that normal impulses `c[k] * normal` on `verts` at `t` make in the followed
    /// forces' ticks (0 when none are followed).
    fn force_error(&self, verts: &[u32], c: &[f64], normal: DVec3, t: f64) -> f64 {
        self.phases.as_ref().map_or(0.0, |phases| {
            (verts.iter().zip(c))
                .filter(|&(_, &ck)| ck != 0.0)
                .map(|(&v, &ck)| phases.error(v, ck * normal, t))
                .sum()
        })
    }

    /// Pair `pair`, of kind `key`, begins an episode (its first layer was activated). Work
    /// that its previous episode could not close is carried over: between episodes the pair's
    /// potential is zero, so it is still the ticks' error.
    pub(super) fn begin(&mut self, pair: u32, key: ContactKey) {
        if !self.enabled {
            return;
        }
        let i = pair as usize;
        if self.work.len() <= i {
            self.work.resize(i + 1, 0.0);
            self.open.resize(i + 1, false);
            self.key.resize(i + 1, None);
            self.last_distance.resize(i + 1, f64::INFINITY);
            self.top_error.resize(i + 1, 0.0);
        }
        if !(self.open[i] && self.key[i] == Some(key)) {
            self.work[i] = 0.0;
            self.open[i] = matches!(key, ContactKey::Feature(_));
            self.key[i] = Some(key);
            self.last_distance[i] = f64::INFINITY;
        }
        // Work carried over is not this episode's ticks' error.
        self.top_error[i] = self.work[i];
    }

    /// Records the impulses of `tick` (one tick at `t` of a layer of thickness `eta`) about to
    /// be applied to the pair's vertices `verts`. Call before applying them.
    pub(super) fn record(
        &mut self,
        pair: u32,
        verts: &[u32],
        tick: &PairImpulse<6>,
        eta: f64,
        state: &VertexState,
        t: f64,
    ) {
        let i = pair as usize;
        if !self.enabled || (!self.open[i] && self.objects.is_none()) {
            return;
        }
        let normal_work = self.normal_work(verts, tick, state, t);
        if let Some(objects) = &mut self.objects {
            let work = normal_work.map(|w| w.work);
            let key = self.key[i].expect("a pair begins before it ticks");
            let slot = pair;
            objects.record(
                &TickWork {
                    slot,
                    key,
                    verts,
                    tick,
                    work,
                },
                state,
                t,
            );
        }
        if !self.open[i] {
            return;
        }
        // With cor = 1 a pair inside the layer that owns its contact point is pushed.
        let acts = tick.impulses[..verts.len()]
            .iter()
            .any(|&j| j != DVec3::ZERO);
        if tick.distance < eta && !acts {
            self.open[i] = false;
            return;
        }
        let Some(NormalWork { mut work, iu, i2k }) = normal_work else {
            self.open[i] = false;
            return;
        };
        if let Some((schedule, cor)) = &self.restitution {
            let (before, now) = (self.last_distance[i], tick.distance);
            let released = potential(schedule, before) - potential(schedule, now);
            let exact = if now < before {
                released
            } else {
                cor * released
            };
            // The tick that turns the pair round: the exact layers would have stored the
            // energy it came in with (its normal kinetic energy K_- = (I u)^2 / (2 I^2 K) and
            // its layers' energy now, less the error of its ticks since it last turned the
            // other way) and returned `cor` of it.
            let error = self.work[i] - exact;
            let turn = if iu < 0.0 && iu + i2k > 0.0 {
                (1.0 - cor) * (iu * iu / (2.0 * i2k) - (error - self.top_error[i]))
            } else {
                if iu > 0.0 && iu + i2k < 0.0 {
                    self.top_error[i] = error;
                }
                0.0
            };
            work += turn - exact;
            self.last_distance[i] = now;
        }
        self.work[i] += work;
    }

    /// The energy that the normal parts of `tick`'s impulses put into the free vertices
    /// `verts` at `t` (with their error in the followed forces' ticks), or `None` when one of
    /// the vertices is fixed but moving (a script does work on the pair).
    fn normal_work(
        &self,
        verts: &[u32],
        tick: &PairImpulse<6>,
        state: &VertexState,
        t: f64,
    ) -> Option<NormalWork> {
        let normal = tick.normal;
        let mut c = [0.0; 6];
        let (mut work, mut iu, mut i2k) = (0.0, 0.0, 0.0);
        for (k, (&vert, &j)) in verts.iter().zip(&tick.impulses).enumerate() {
            let v = vert as usize;
            let w = state.inv_mass[v];
            if w == 0.0 {
                if state.v[v] != DVec3::ZERO {
                    return None;
                }
                continue;
            }
            let jn = j.dot(normal);
            work += jn * normal.dot(state.v[v]) + 0.5 * w * jn * jn;
            c[k] = jn;
            iu += jn * normal.dot(state.v[v]);
            i2k += w * jn * jn;
        }
        work += self.force_error(verts, &c, normal, t);
        Some(NormalWork { work, iu, i2k })
    }

    /// The impulses that close the open work of pair `pair` (key `key`, vertices `verts`) at
    /// time `t`, a tick at which the pair is outside its outermost layer (its potential is
    /// zero), or `None`. An episode that was not the potential's starts afresh here. The
    /// impulse keeps the sign of the pair's relative normal velocity; when it cannot (the
    /// energy to take out exceeds that motion's), the work stays open for a later tick.
    pub(super) fn close(
        &mut self,
        pair: u32,
        key: ContactKey,
        verts: &[u32],
        state: &VertexState,
        t: f64,
    ) -> Option<[DVec3; 4]> {
        let i = pair as usize;
        if !self.enabled {
            return None;
        }
        if !self.open[i] {
            self.open[i] = matches!(key, ContactKey::Feature(_));
            self.work[i] = 0.0;
            self.last_distance[i] = f64::INFINITY;
            self.top_error[i] = 0.0;
            return None;
        }
        let work = self.work[i];
        if work == 0.0 {
            return None;
        }
        let x: [DVec3; 4] = std::array::from_fn(|k| state.position_at(verts[k] as usize, t));
        let c = match key {
            ContactKey::Feature(PairKey::VertexTriangle(..)) => {
                let w = vertex_triangle(x[0], x[1], x[2], x[3]).weights;
                [1.0, -w[0], -w[1], -w[2]]
            }
            ContactKey::Feature(PairKey::EdgeEdge(..)) => {
                let cl = edge_edge(x[0], x[1], x[2], x[3]);
                [1.0 - cl.s, cl.s, -(1.0 - cl.t), -cl.t]
            }
            ContactKey::Triangles(..) => return None,
        };
        let normal = weighted(c, x).try_normalize()?;
        let v: [DVec3; 4] = std::array::from_fn(|k| state.v[verts[k] as usize]);
        let inv_mass: [f64; 4] = std::array::from_fn(|k| state.inv_mass[verts[k] as usize]);
        // Relative normal velocity u and effective inverse mass K: an impulse lambda c_k n
        // changes the kinetic energy by lambda u + K lambda^2 / 2 and u to u + K lambda; the
        // followed forces' error by lambda e.
        let u = weighted(c, v).dot(normal);
        let k: f64 = (0..4).map(|m| c[m] * c[m] * inv_mass[m]).sum();
        let e = self.force_error(verts, &c, normal, t);
        // lambda (u + e) + K lambda^2 / 2 = -work, the root that keeps the sign of u:
        // u + e + K lambda = sign(u) sqrt((u + e)^2 - 2 K work).
        let ue = u + e;
        let disc = ue * ue - 2.0 * k * work;
        let lambda = (disc.sqrt().copysign(u) - ue) / k;
        if !(u != 0.0 && ue * u > 0.0 && k > 0.0 && disc > 0.0) || (u + k * lambda) * u <= 0.0 {
            if self.restitution.is_some() {
                // Not kept for a later episode: whether the pair is still a candidate then
                // depends on the broad phase, which must not change the motion.
                self.work[i] = 0.0;
                self.top_error[i] = 0.0;
            }
            return None;
        }
        self.work[i] = 0.0;
        if let Some(top) = self.top_error.get_mut(i) {
            *top = 0.0;
        }
        if let Some(objects) = &mut self.objects {
            objects.closed_by_pair(key, verts, work);
        }
        Some(c.map(|cm| cm * lambda * normal))
    }

    /// After a layer tick at `t`: the impulses that close the episodes of the objects that
    /// parted during it (`object_closure.rs`), to be applied. The pairs whose open work they
    /// took out start afresh. Returns how many episodes it closed.
    pub(super) fn close_parted_objects(
        &mut self,
        state: &VertexState,
        t: f64,
        impulses: &mut Vec<(u32, DVec3)>,
    ) -> u64 {
        impulses.clear();
        let Some(objects) = &mut self.objects else {
            return 0;
        };
        let mut count = 0;
        let (work, open, key) = (&mut self.work, &mut self.open, &self.key);
        objects.close_parted(state, t, self.phases.as_ref(), &mut |closing| {
            for (slot, k) in closing.slots {
                let i = slot as usize;
                if key[i] == Some(k) {
                    work[i] = 0.0;
                    open[i] = matches!(k, ContactKey::Feature(_));
                }
            }
            impulses.extend(closing.impulses);
            count += 1;
        });
        count
    }
}

/// What the normal parts of one tick's impulses did: the energy they put in, and `I u`, `I^2 K`
/// for the normal impulse `I`, the pair's relative normal velocity `u` before it and its
/// effective inverse mass `K`.
#[derive(Clone, Copy)]
struct NormalWork {
    work: f64,
    iu: f64,
    i2k: f64,
}

/// The energy of every layer of `schedule` at distance `d` (layers thinner than `d` hold
/// none; `d > 0`, so there are finitely many).
fn potential(schedule: &LayerSchedule, d: f64) -> f64 {
    (1..)
        .map_while(|l| (schedule.eta(l) > d).then(|| schedule.energy(l, d)))
        .sum()
}

/// `sum_k c_k a_k`.
fn weighted(c: [f64; 4], a: [DVec3; 4]) -> DVec3 {
    c[0] * a[0] + c[1] * a[1] + c[2] * a[2] + c[3] * a[3]
}
