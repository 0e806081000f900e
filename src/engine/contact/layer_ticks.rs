//! Penalty layers: activation, each layer's clock, the ticks of a layer's super-event (every
//! member's impulse from the state before the tick, applied in key order), lazy deactivation,
//! and the layers' energy.

use glam::DVec3;

use super::motion::{feature_distance, first_four, local_feature_distance};
use super::ordered_kicks::OrderedKicks;
use super::owners::FeatureOwners;
use super::pair_table::PairTable;
use super::work_closure::WorkClosure;
use crate::engine::layer_events::{LayerEvents, Member};
use crate::engine::triangle_pairs::TriangleTopology;
use crate::events::{EventQueue, Scheduler};
use crate::penalty::closest::TRIANGLE_PAIR_FEATURES;
use crate::penalty::impulse::{
    edge_edge_impulse, triangle_pair_impulse, vertex_triangle_impulse, PairHistory, PairImpulse,
    PenaltyParams,
};
use crate::penalty::layers::{LayerClocks, LayerSchedule};
use crate::penalty::{ContactKey, PairKey};
use crate::profiling::zone;
use crate::scene::SpeedLimit;
use crate::state::{speed, VertexState};
use crate::team;
use crate::RunError;

/// Layer ticks with at least this many members compute their impulses in parallel, one block
/// of members a thread, and apply them in parallel unless the work closure needs them applied
/// one by one.
const PARALLEL_TICK: usize = 256;

/// How far beyond its thickness a separating member leaves its deepest layer, in multiples of
/// the thickness (a layer applies nothing out there, so where it is left changes no motion).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Leave {
    /// The factor of members that have applied an impulse in the layer, and of every member
    /// of the layers shallower than `idle_from`.
    pub(super) factor: f64,
    /// The factor of the other members: those that never acted in a layer `idle_from` or
    /// deeper.
    pub(super) idle_factor: f64,
    /// The shallowest layer whose idle members leave at `idle_factor`.
    pub(super) idle_from: u32,
}

impl Leave {
    /// One factor for every member.
    pub(super) fn always(factor: f64) -> Self {
        Self {
            factor,
            idle_factor: factor,
            idle_from: 1,
        }
    }

    /// The factor of a member of layer `l` that has (or has not) acted in it.
    pub(super) fn factor(&self, l: u32, has_acted: bool) -> f64 {
        if has_acted || l < self.idle_from {
            self.factor
        } else {
            self.idle_factor
        }
    }
}

/// The layer laws, the penalty response, and the layers' super-events (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct LayerTicks {
    schedule: LayerSchedule,
    cor: f64,
    mu: f64,
    friction_cap: bool,
    /// `contact.safety`, the factor of every layer clock.
    safety: f64,
    /// `contact.clocks`, the stiffness each layer clock resolves.
    clock_rule: LayerClocks,
    /// The lightest free vertex's mass, which sets every layer's clock.
    m_min: f64,
    /// Clocks of layers `1..=clocks.len()`, computed as layers are first reached.
    clocks: Vec<f64>,
    events: LayerEvents,
    /// The open contact episodes' work (`contact.work_closure`).
    closure: WorkClosure,
    /// A tick that speeds a vertex past this stops the run.
    speed_limit: SpeedLimit,
    /// Per pair id: what its contact episode's earlier ticks left.
    histories: Vec<PairHistory>,
    /// Per vertex: the longest interval between the regular kicks that load it (0 for fixed
    /// and scripted vertices); a pair's friction window is at least its vertices' largest.
    kick_clocks: Vec<f64>,
    /// Per vertex: how many members of the current tick touch it (0 outside a tick).
    sharing: Vec<u32>,
    /// Per vertex: the tick that last collected it (dedupes the kicked vertices).
    vertex_stamp: Vec<u32>,
    vertex_epoch: u32,
    /// Scratch: one tick's impulses and kicked vertices, and the impulses closing the episodes
    /// of objects that parted.
    impulses: Vec<PairImpulse<6>>,
    kicked: Vec<u32>,
    closing: Vec<(u32, DVec3)>,
    /// Scratch of a large tick's impulses applied in parallel.
    ordered: OrderedKicks,
    pub(super) stats: LayerStats,
}

/// Counters of the layers, for `stats.json`.
#[derive(Clone, Debug, Default)]
pub(super) struct LayerStats {
    /// Deepest layer ever activated (0: none).
    pub(super) deepest_layer: u32,
    /// Deepest layer that ever applied an impulse (0: none).
    pub(super) deepest_acting_layer: u32,
    /// Super-events per layer (index 0 is layer 1).
    pub(super) penalty_events_per_layer: Vec<u64>,
    /// Pair impulses evaluated by those ticks, per layer.
    pub(super) penalty_pair_ticks_per_layer: Vec<u64>,
    /// Times a pair entered each layer.
    pub(super) activations_per_layer: Vec<u64>,
    /// Smallest pair distance at a tick.
    pub(super) min_distance: f64,
    /// Contacts between objects closed on the objects' motion (`object_closure.rs`).
    pub(super) object_closings: u64,
}

/// The settings of [`LayerTicks`].
#[derive(Clone, Copy, Debug)]
pub(in crate::engine) struct LayerLaw {
    /// Thicknesses and stiffnesses of the layers.
    pub(in crate::engine) schedule: LayerSchedule,
    /// Coefficient of restitution.
    pub(in crate::engine) cor: f64,
    /// Friction coefficient.
    pub(in crate::engine) mu: f64,
    /// Whether friction is capped at the normal impulse's tangential need.
    pub(in crate::engine) friction_cap: bool,
    /// `contact.safety`.
    pub(in crate::engine) safety: f64,
    /// `contact.clocks`.
    pub(in crate::engine) clocks: LayerClocks,
    /// `contact.work_closure`.
    pub(in crate::engine) work_closure: bool,
    /// `contact.closure_restitution`.
    pub(in crate::engine) closure_restitution: bool,
    /// One super-event per layer rather than per pair and layer.
    pub(in crate::engine) layer_super_events: bool,
    /// The fastest speed contact can resolve.
    pub(in crate::engine) speed_limit: SpeedLimit,
}

/// One layer tick between its impulses and its end: the layer, its members, and the vertices
/// whose velocities changed (for the caller to re-time their certificates).
#[derive(Debug)]
pub(super) struct LayerTick {
    layer: u32,
    members: Vec<Member>,
    /// Vertices whose velocity the tick changed, each once.
    pub(super) kicked: Vec<u32>,
}

impl LayerTicks {
    /// The layers of a scene whose vertices are loaded by kicks at most `kick_clocks` apart
    /// (one per vertex, `crate::model::kick_clocks`) and whose lightest free vertex weighs
    /// `m_min`.
    pub(super) fn new(law: LayerLaw, kick_clocks: Vec<f64>, m_min: f64) -> Self {
        let vertices = kick_clocks.len();
        Self {
            schedule: law.schedule,
            cor: law.cor,
            mu: law.mu,
            friction_cap: law.friction_cap,
            safety: law.safety,
            clock_rule: law.clocks,
            m_min,
            clocks: Vec::new(),
            events: LayerEvents::new(law.layer_super_events),
            closure: WorkClosure::new(
                law.work_closure,
                law.cor,
                law.closure_restitution,
                law.schedule,
            ),
            speed_limit: law.speed_limit,
            histories: Vec::new(),
            kick_clocks,
            sharing: vec![0; vertices],
            vertex_stamp: vec![0; vertices],
            vertex_epoch: 0,
            impulses: Vec::new(),
            kicked: Vec::new(),
            closing: Vec::new(),
            ordered: OrderedKicks::default(),
            stats: LayerStats {
                min_distance: f64::INFINITY,
                ..LayerStats::default()
            },
        }
    }

    /// The clock of layer `l`.
    fn clock(&mut self, l: u32) -> f64 {
        while self.clocks.len() < l as usize {
            let next = self.clocks.len() as u32 + 1;
            let h = self
                .schedule
                .clock_by(self.clock_rule, next, self.m_min, self.safety);
            self.clocks.push(h);
        }
        self.clocks[l as usize - 1]
    }

    /// The work closure of elastic contact episodes.
    pub(super) fn closure(&mut self) -> &mut WorkClosure {
        &mut self.closure
    }

    /// The clock of layer `l`, which has been active (so its clock is known).
    pub(super) fn active_clock(&self, l: u32) -> f64 {
        self.clocks[l as usize - 1]
    }

    /// Makes pair `id` a member of layer `l`, whose next tick is after `t`.
    pub(super) fn activate(
        &mut self,
        pairs: &mut PairTable,
        id: u32,
        l: u32,
        t: f64,
        sched: &mut Scheduler<'_>,
    ) -> Result<(), RunError> {
        let h = self.clock(l);
        if h.is_nan() || h <= 0.0 || t + h <= t {
            return Err(RunError::NoProgress {
                time: t,
                pair: pairs.describe(id),
                layer: l,
                clock: h,
            });
        }
        let i = id as usize;
        debug_assert_eq!(pairs.active[i] + 1, l);
        let member = Member {
            key: pairs.key[i],
            pair: id,
            acted: false,
            has_acted: false,
        };
        self.events.join(l, h, member, t, sched.table, sched.queue);
        pairs.active[i] = l;
        if l == 1 {
            self.closure.begin(id, pairs.key[i]);
            if self.histories.len() <= i {
                self.histories.resize(i + 1, PairHistory::default());
            }
            self.histories[i] = PairHistory::default();
        }
        let stats = &mut self.stats;
        stats.deepest_layer = stats.deepest_layer.max(l);
        if stats.penalty_events_per_layer.len() < l as usize {
            stats.penalty_events_per_layer.resize(l as usize, 0);
            stats.penalty_pair_ticks_per_layer.resize(l as usize, 0);
            stats.activations_per_layer.resize(l as usize, 0);
        }
        stats.activations_per_layer[l as usize - 1] += 1;
        Ok(())
    }

    /// The penalty groups due together at `t` with the group of `payload`, whose event has just
    /// popped (see [`LayerEvents::due_together`]); other events due with it are popped from
    /// `sched`'s queue or queued back there.
    pub(super) fn due_together(
        &self,
        payload: u32,
        t: f64,
        sched: &mut Scheduler<'_>,
        batch: &mut Vec<u32>,
    ) {
        (self.events).due_together(payload, t, sched.table, sched.queue, batch);
    }

    /// The first half of a tick of the penalty groups whose events have payloads `batch` (one
    /// layer's super-event, or the per-pair events of one layer due at one instant, from
    /// [`Self::due_together`]): every member's impulse from the state before the tick (feature
    /// pairs that do not own their contact point give none), then applied in key order. Stops
    /// the run if a vertex is sped past what contact can resolve.
    pub(super) fn tick(
        &mut self,
        batch: &[u32],
        pairs: &PairTable,
        surfaces: Surfaces<'_>,
        state: &mut VertexState,
        t: f64,
    ) -> Result<LayerTick, RunError> {
        let (l, mut members) = self.events.take_members(batch);
        let params = self.params(l);
        let mut impulses = std::mem::take(&mut self.impulses);
        let verts_of = |m: &Member| &pairs.verts[m.pair as usize][..m.key.vertex_count()];
        // A vertex's mass is split among the members that acted on it at their last tick of
        // this layer, so that their friction and damping, computed side by side from the same
        // state, add up to what one pair would apply. Such a member was within the layer's
        // thickness one clock ago, so every scheduler has it in this tick.
        for m in &members {
            if m.acted {
                for &vert in verts_of(m) {
                    self.sharing[vert as usize] += 1;
                }
            }
        }
        let frozen: &VertexState = state;
        let (histories, sharing) = (&self.histories, &self.sharing);
        let kicks = &self.kick_clocks;
        let impulse = |m: &Member| {
            let history = &histories[m.pair as usize];
            let shared = Shared { sharing, kicks };
            member_impulse(m, pairs, surfaces, frozen, history, shared, t, &params)
        };
        let zone = || zone!("penalty_task");
        team::map_into(&members, &mut impulses, PARALLEL_TICK / 2, zone, impulse);
        self.remember(l, params.eta, &mut members, &impulses, pairs);
        self.stats.penalty_events_per_layer[l as usize - 1] += batch.len() as u64;
        self.stats.penalty_pair_ticks_per_layer[l as usize - 1] += members.len() as u64;

        self.vertex_epoch = self.vertex_epoch.wrapping_add(1);
        if self.vertex_epoch == 0 {
            self.vertex_stamp.fill(0);
            self.vertex_epoch = 1;
        }
        let mut kicked = std::mem::take(&mut self.kicked);
        kicked.clear();
        let eta = params.eta;
        let outermost = self.schedule.eta1;
        if members.len() >= PARALLEL_TICK && !self.closure.enabled() {
            // Nothing reads the state between two members' impulses: apply them in parallel.
            let nearest = impulses
                .iter()
                .map(|r| r.distance)
                .fold(f64::INFINITY, f64::min);
            self.stats.min_distance = self.stats.min_distance.min(nearest);
            if impulses
                .iter()
                .any(|r| r.impulses.iter().any(|&j| j != DVec3::ZERO))
            {
                self.stats.deepest_acting_layer = self.stats.deepest_acting_layer.max(l);
            }
            let verts = |k: usize| verts_of(&members[k]);
            let impulse = |k: usize, s: usize| impulses[k].impulses[s];
            (self.ordered).apply(state, t, members.len(), verts, impulse, &mut kicked);
        } else {
            for (m, result) in members.iter().zip(&impulses) {
                self.stats.min_distance = self.stats.min_distance.min(result.distance);
                if result.impulses.iter().any(|&j| j != DVec3::ZERO) {
                    self.stats.deepest_acting_layer = self.stats.deepest_acting_layer.max(l);
                }
                let verts = verts_of(m);
                self.closure.record(m.pair, verts, result, eta, state, t);
                self.apply(state, verts, &result.impulses, t, &mut kicked);
                if result.distance >= outermost {
                    if let Some(closing) = self.closure.close(m.pair, m.key, verts, state, t) {
                        self.apply(state, verts, &closing, t, &mut kicked);
                    }
                }
            }
        }
        self.impulses = impulses;
        let mut closing = std::mem::take(&mut self.closing);
        self.stats.object_closings += self.closure.close_parted_objects(state, t, &mut closing);
        for &(v, impulse) in &closing {
            self.apply(state, &[v], &[impulse], t, &mut kicked);
        }
        self.closing = closing;
        if let Some(v) = state.first_beyond(kicked.iter().copied(), self.speed_limit.at(t)) {
            return Err(RunError::SpeedRunaway {
                time: t,
                vertex: pairs.describe_vertex(v),
                speed: speed(state.v[v as usize]),
                limit: self.speed_limit.at(t),
            });
        }
        Ok(LayerTick {
            layer: l,
            members,
            kicked,
        })
    }

    /// After the impulses of a tick of layer `l` (thickness `eta`): clears the members'
    /// vertices' mass sharing, marks which members acted, and writes their pairs' histories.
    /// Only ticks within the layer's thickness write a history, and a tick of layer 1 outside
    /// it ends the episode. Every scheduler has the layer active at the first kind of tick and
    /// layer 1 active at the first layer-1 tick after one, but only some have the layers active
    /// farther out (the speculative windows switch them on early and leave them late), so the
    /// history does not depend on which.
    fn remember(
        &mut self,
        l: u32,
        eta: f64,
        members: &mut [Member],
        impulses: &[PairImpulse<6>],
        pairs: &PairTable,
    ) {
        for (m, result) in members.iter_mut().zip(impulses) {
            for &vert in &pairs.verts[m.pair as usize][..m.key.vertex_count()] {
                self.sharing[vert as usize] = 0;
            }
            m.acted = result.impulses.iter().any(|&j| j != DVec3::ZERO);
            m.has_acted |= m.acted;
            let history = &mut self.histories[m.pair as usize];
            if result.distance < eta {
                *history = PairHistory {
                    anchor: result.anchor,
                    gap: Some(result.distance),
                    credit: result.credit,
                };
            } else if l == 1 {
                *history = PairHistory::default();
            }
        }
    }

    /// Applies `impulses` to `verts` at `t`, adding each vertex whose velocity changed to
    /// `kicked` once per tick.
    fn apply(
        &mut self,
        state: &mut VertexState,
        verts: &[u32],
        impulses: &[DVec3],
        t: f64,
        kicked: &mut Vec<u32>,
    ) {
        for (&vert, &impulse) in verts.iter().zip(impulses) {
            let before = state.v[vert as usize];
            state.apply_impulse(vert as usize, t, impulse);
            if state.v[vert as usize] != before
                && self.vertex_stamp[vert as usize] != self.vertex_epoch
            {
                self.vertex_stamp[vert as usize] = self.vertex_epoch;
                kicked.push(vert);
            }
        }
    }

    /// The end of a tick: members separating beyond their [`Leave`] reach of their deepest
    /// layer leave it (lazy deactivation; their ids go to `left`, to be certified again), and
    /// the next tick of every group that keeps a member is queued.
    pub(super) fn finish(
        &mut self,
        tick: LayerTick,
        pairs: &mut PairTable,
        queue: &mut EventQueue,
        left: &mut Vec<u32>,
        leave: Leave,
    ) {
        let LayerTick {
            layer: l,
            mut members,
            kicked,
        } = tick;
        let eta = self.schedule.eta(l);
        left.clear();
        let mut kept = 0;
        for k in 0..members.len() {
            let (m, result) = (members[k], &self.impulses[k]);
            let i = m.pair as usize;
            let reach = leave.factor(l, m.has_acted) * eta;
            if pairs.active[i] == l && result.distance > reach && result.separating {
                pairs.active[i] = l - 1;
                pairs.certified[i] = l;
                left.push(m.pair);
            } else {
                members[kept] = m;
                kept += 1;
            }
        }
        members.truncate(kept);
        self.events.finish_tick(members, queue);
        self.kicked = kicked;
    }

    /// The penalty parameters of layer `l`.
    fn params(&mut self, l: u32) -> PenaltyParams {
        PenaltyParams {
            eta: self.schedule.eta(l),
            r: self.schedule.r(l),
            h: self.clock(l),
            cor: self.cor,
            mu: self.mu,
            friction_cap: self.friction_cap,
            stack: Some((self.schedule, l)),
            kick: 0.0,
        }
    }

    /// Penalty energy of every active layer at `positions`, of the feature pairs that own
    /// their contact point: summed in pair order, so that it depends neither on where the
    /// pairs sit in the table nor on layers active beyond their pairs' reach.
    pub(super) fn energy(
        &self,
        pairs: &PairTable,
        surfaces: Surfaces<'_>,
        positions: &[DVec3],
    ) -> f64 {
        let mut terms = Vec::new();
        let position = |v: u32| positions[v as usize];
        for i in 0..pairs.slots() as usize {
            if !pairs.live[i] || pairs.active[i] == 0 {
                continue;
            }
            let x = pairs.verts[i].map(position);
            let active = pairs.active[i];
            let layers = |d: f64| {
                (1..=active)
                    .map(|l| self.schedule.energy(l, d))
                    .sum::<f64>()
            };
            let key = pairs.key[i];
            let energy = match key {
                ContactKey::Feature(f) => {
                    let verts = first_four(&pairs.verts[i]);
                    if surfaces.owners.acts(f, verts, first_four(&x), position) {
                        layers(feature_distance(f, first_four(&x)))
                    } else {
                        0.0
                    }
                }
                // Each feature pair's energy, shared like its impulse.
                ContactKey::Triangles(..) => {
                    let shares = surfaces.shares(pairs, i, &x, position);
                    let mut energy = 0.0;
                    for (&f, share) in TRIANGLE_PAIR_FEATURES.iter().zip(shares) {
                        if share != 0.0 {
                            energy += share * layers(local_feature_distance(f, &x));
                        }
                    }
                    energy
                }
            };
            if energy != 0.0 {
                terms.push((key, energy));
            }
        }
        terms.sort_unstable_by_key(|&(key, _)| key);
        terms.iter().fold(0.0, |total, &(_, energy)| total + energy)
    }
}

/// What decides which feature pairs act: the owners of shared contact points, and the
/// triangle adjacency of triangle-pair contact (`speed.triangle_pairs`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Surfaces<'a> {
    /// The owners of shared contact points.
    pub(super) owners: &'a FeatureOwners,
    /// The triangle adjacency, with triangle-pair contact.
    pub(super) topology: Option<&'a TriangleTopology>,
}

impl Surfaces<'_> {
    /// The share of each feature pair of triangle pair `i` at positions `x`: `1/k` of its
    /// impulse and energy if it owns its contact point (`k` the triangle pairs it lies in),
    /// else 0.
    fn shares(
        &self,
        pairs: &PairTable,
        i: usize,
        x: &[DVec3; 6],
        position: impl Fn(u32) -> DVec3 + Copy,
    ) -> [f64; 15] {
        let ContactKey::Triangles(s, t) = pairs.key[i] else {
            return [0.0; 15];
        };
        let keys = self
            .topology
            .expect("triangle pairs exist only with speed.triangle_pairs")
            .features(s, t);
        let verts = &pairs.verts[i];
        let mut shares = [0.0; 15];
        for (f, feature) in TRIANGLE_PAIR_FEATURES.iter().enumerate() {
            let local = feature.verts();
            if self.owners.acts(
                keys[f],
                &local.map(|k| verts[k]),
                &local.map(|k| x[k]),
                position,
            ) {
                shares[f] = 1.0 / f64::from(pairs.multiplicity[i][f]);
            }
        }
        shares
    }
}

/// Per vertex, for a tick's members: how many of them touch it (its mass is split among
/// them), and the longest interval between the kicks that load it.
#[derive(Clone, Copy)]
struct Shared<'a> {
    sharing: &'a [u32],
    kicks: &'a [f64],
}

/// Member `m`'s impulses of one tick, from the state `state` before the tick and the pair's
/// `history`, each vertex's mass split among the tick's members that touch it (`shared`); none
/// from a feature pair that does not own its contact point (the distance, normal and
/// `separating` are kept, for lazy deactivation, and its anchor and friction credit are left
/// as they were).
#[allow(clippy::too_many_arguments)]
fn member_impulse(
    m: &Member,
    pairs: &PairTable,
    surfaces: Surfaces<'_>,
    state: &VertexState,
    history: &PairHistory,
    shared: Shared<'_>,
    t: f64,
    params: &PenaltyParams,
) -> PairImpulse<6> {
    let verts = &pairs.verts[m.pair as usize];
    let sharing = shared.sharing;
    // Every layer the pair has active holds it (those beyond their thickness add nothing, so
    // the layers a scheduler switched on early or kept on late change nothing), over the
    // longest interval between the kicks that load its vertices.
    let kick = verts[..m.key.vertex_count()]
        .iter()
        .fold(0.0, |most: f64, &v| most.max(shared.kicks[v as usize]));
    let params = &PenaltyParams {
        stack: (params.stack).map(|(schedule, _)| (schedule, pairs.active[m.pair as usize])),
        kick,
        ..*params
    };
    let x = verts.map(|v| state.position_at(v as usize, t));
    let v = verts.map(|v| state.v[v as usize]);
    let inv_mass = verts.map(|v| state.inv_mass[v as usize]);
    let position = |v: u32| state.position_at(v as usize, t);
    type Kernel =
        fn([DVec3; 4], [DVec3; 4], [f64; 4], &PairHistory, &PenaltyParams) -> PairImpulse<4>;
    let feature = |key: PairKey, kernel: Kernel| {
        let split = |k: usize| inv_mass[k] * f64::from(sharing[verts[k] as usize].max(1));
        let out = kernel(
            *first_four(&x),
            *first_four(&v),
            [split(0), split(1), split(2), split(3)],
            history,
            params,
        );
        let mut impulses = [DVec3::ZERO; 6];
        let (mut anchor, mut credit) = (history.anchor, history.credit);
        if out.distance < params.eta
            && surfaces
                .owners
                .acts(key, first_four(verts), first_four(&x), position)
        {
            impulses[..4].copy_from_slice(&out.impulses);
            (anchor, credit) = (out.anchor, out.credit);
        }
        PairImpulse {
            impulses,
            distance: out.distance,
            normal: out.normal,
            separating: out.separating,
            anchor,
            credit,
        }
    };
    match m.key {
        ContactKey::Feature(key @ PairKey::VertexTriangle(..)) => {
            feature(key, vertex_triangle_impulse)
        }
        ContactKey::Feature(key @ PairKey::EdgeEdge(..)) => feature(key, edge_edge_impulse),
        ContactKey::Triangles(..) => {
            let shares = surfaces.shares(pairs, m.pair as usize, &x, position);
            triangle_pair_impulse(x, v, inv_mass, &shares, params)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Leave;

    #[test]
    fn idle_members_of_deep_layers_leave_at_their_own_factor() {
        let leave = Leave {
            factor: 2.0,
            idle_factor: 1.25,
            idle_from: 3,
        };
        // Idle in the third layer or deeper: the idle factor.
        assert_eq!(leave.factor(3, false), 1.25);
        assert_eq!(leave.factor(7, false), 1.25);
        // Acted, or in one of the two shallowest layers: the factor of every member.
        assert_eq!(leave.factor(3, true), 2.0);
        assert_eq!(leave.factor(2, false), 2.0);
        assert_eq!(leave.factor(1, false), 2.0);
        let kds = Leave::always(1.0);
        assert!((1..10).all(|l| kds.factor(l, false) == 1.0 && kds.factor(l, true) == 1.0));
    }
}
