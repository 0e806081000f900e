//! The contact subsystem of the loop: candidate pairs, separation slabs, penalty layers, and the
//! contingency from vertices to the certificates they support (thesis Alg. 7, Table 5.1).
//!
//! Pairs are vertex-triangle (VT) and edge-edge (EE) pairs of primitives sharing no vertex,
//! found by the broad phase ([`BroadPhase`]: by default the kinetic separation list), or, with
//! `speed.triangle_pairs`, the vertex-disjoint triangle pairs that contain them
//! ([`super::triangle_pairs`]). Each pair has a *certified layer* `L`: a
//! separation slab certifies that the pair stays at least `eta(L)` apart, and layers
//! `1 .. L - 1` are active: the pair is a member of each layer's super-event
//! ([`LayerEvents`]), which ticks on the layer's fixed clock.
//!
//! Certificates decide when to look, never what happens: a slab failure only reads positions
//! and schedules a layer; only penalty ticks write vertex state.

use glam::DVec3;
use rayon::prelude::*;

mod audit;
mod certification;
mod energy_limit;
mod force_phases;
mod layer_ticks;
mod motion;
mod object_closure;
mod ordered_kicks;
mod owners;
mod pair_table;
mod work_closure;

pub(super) use motion::feature_distance;
use motion::{first_four, local_feature_distance, Motion};

use super::triangle_pairs::TriangleTopology;
use crate::events::{EventId, EventKind, EventQueue, Scheduler};
use crate::kds::{BroadPhase, BroadPhaseKind, BroadPhaseStats};
use crate::mesh::TriangleList;
use crate::model::ObjectRange;
use crate::penalty::closest::TRIANGLE_PAIR_FEATURES;
use crate::penalty::layers::LayerSchedule;
use crate::penalty::ContactKey;
use crate::penalty::PairKey;
use crate::profiling::zone;
use crate::state::VertexState;
use crate::RunError;
use audit::Audit;
use certification::{Certifier, SLAB_MARGIN};
use energy_limit::EnergyLimit;
use force_phases::ForcePhases;
pub(super) use layer_ticks::LayerLaw;
use layer_ticks::{LayerTicks, Leave, Surfaces};
use owners::FeatureOwners;
use pair_table::{Keeps, PairTable};

/// Layer activation threshold: a failing layer-`l` slab activates layer `l` when the pair is
/// closer than `ACTIVATION * eta(l)` (thesis §5.3: 11/10).
pub(super) const ACTIVATION: f64 = 1.1;

/// A pair of fixed or scripted primitives is stopped when it comes closer than this many times
/// a layer's thickness (no force can keep it out of the layer), not at the activation distance:
/// a slab certifies `SLAB_MARGIN = 1 + 1e-9` times the thickness and fails there, within this
/// reach; a look at a fuzzy trajectory's slab, or a slab failing early, finds prescribed
/// motion farther out, which is let go and certified again.
pub(in crate::engine) const KINEMATIC_REACH: f64 = 1.0 + 1e-6;

/// Speculative scheduling: a pair leaves a layer once it separates beyond this many times the
/// layer's thickness (beyond the thickness itself under the KDS). A layer left and needed
/// again costs a run of the window; one kept costs its ticks, which apply nothing out there.
const SPECULATIVE_LEAVE: f64 = 2.0;

/// Speculative scheduling: a pair leaves a layer from the [`IDLE_LEAVE_FROM`]th down in which
/// none of its ticks applied an impulse once it separates beyond this many times the layer's
/// thickness. Windows switch such layers on for the kinetic energy of an approach that then
/// stopped short of them, and on the default scene they made most of the layer ticks (a pair
/// resting in a shallow layer keeps its deeper ones). The two shallowest stay to
/// [`SPECULATIVE_LEAVE`]: at a contact front pairs leave them and come back before they act.
const SPECULATIVE_LEAVE_IDLE: f64 = 1.25;

/// The shallowest layer left at [`SPECULATIVE_LEAVE_IDLE`] when idle.
const IDLE_LEAVE_FROM: u32 = 3;

// A pair leaves a layer beyond its activation distance, so it never needs it again at once.
const _: () = assert!(SPECULATIVE_LEAVE > ACTIVATION && SPECULATIVE_LEAVE_IDLE > ACTIVATION);

/// Pair slots per rayon task when a window's end looks for pairs whose boxes no longer overlap.
const STALE_TASK: usize = 1024;

/// Fewest handed-over pairs looked up in the pair table per rayon task (see
/// [`Contact::adopt`]); fewer than twice this many are looked up inline.
const ADOPT_TASK: usize = 128;

/// Contact statistics for `stats.json`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ContactStats {
    /// Deepest penalty layer ever activated (0: none). The speculative scheduler switches
    /// layers on early, so it counts some that never acted.
    pub deepest_layer: u32,
    /// Deepest penalty layer that ever applied an impulse (0: none): the same under both
    /// schedulers where their frames are.
    pub deepest_acting_layer: u32,
    /// Penalty super-events (one tick of one layer) per layer (index 0 is layer 1).
    pub penalty_events_per_layer: Vec<u64>,
    /// Pair impulses evaluated by those ticks, per layer.
    pub penalty_pair_ticks_per_layer: Vec<u64>,
    /// Times a pair entered each layer (for one particle on a floor: its impacts).
    pub activations_per_layer: Vec<u64>,
    /// Contacts between two objects whose work, left open by their pairs, was taken out of the
    /// objects' motion when they parted (`contact.closure_objects`).
    pub object_closings: u64,
    /// Separation-slab failures processed.
    pub slab_events: u64,
    /// Broad-phase window rebuilds.
    pub broad_phase_events: u64,
    /// Certificates looked at after velocity changes (contingent on a kicked vertex).
    pub reschedules: u64,
    /// Of those, the slabs actually re-timed: the rest kept their time because the kick left
    /// every vertex within its fuzzy-trajectory budget (`speed.fuzzy_trajectories`), or had
    /// no slab.
    pub retimes: u64,
    /// Slab certificates parked (kept out of the event queue) because they fail after the next
    /// all-vertex event, which re-times them (`speed.parking`).
    pub parked: u64,
    /// Most candidate pairs (each holding one certificate) alive at once.
    pub certificates_peak: usize,
    /// Contact pairs of two triangles added (`speed.triangle_pairs`; the rest are VT and EE
    /// pairs).
    pub triangle_pairs: u64,
    /// Smallest distance of a candidate (vertex-triangle or edge-edge) pair, sampled at its slab
    /// failures and penalty ticks (cm): the contact code's own view, between frames too. `acm
    /// check` measures something else, the exact distance of every pair of triangles at the
    /// frame times only, so the two differ.
    pub min_distance: f64,
    /// Broad-phase counters, as of the last horizon rebuild.
    pub broad_phase: BroadPhaseStats,
    /// Speculative windows committed (`contact.scheduler = "speculative"`; 0 otherwise).
    pub windows: u64,
    /// Times a speculative window was run again with more layers on.
    pub rollbacks: u64,
    /// Checks of a speculative run part of the way through its window: glances at the last
    /// whole check's candidate pairs, and whole checks where the rest of the run was expected
    /// to cost far more than one.
    pub probes: u64,
    /// Events processed in runs of speculative windows that were then rolled back, and so
    /// processed again: what speculation cost on top of the run's own `events_total`.
    pub rolled_back_events: u64,
}

/// A speculative run's window counters, added up window by window (not part of a checkpoint:
/// a rollback does not undo them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct WindowCounts {
    /// Windows committed.
    pub(super) committed: u64,
    /// Times a window was rolled back.
    pub(super) rollbacks: u64,
    /// Checks part of the way through a window's run.
    pub(super) probes: u64,
    /// Events processed in the runs rolled back.
    pub(super) rolled_back_events: u64,
}

/// Contact state and its events (see the module docs).
#[derive(Debug)]
pub(super) struct Contact {
    schedule: LayerSchedule,
    /// The broad phase and what drives it.
    broad: BroadDriving,
    /// The triangle adjacency of triangle-pair contact (`speed.triangle_pairs`), or `None`.
    triangle_pairs: Option<TriangleTopology>,
    /// Which feature pair acts for a contact point shared by several triangles.
    owners: FeatureOwners,
    pairs: PairTable,
    certifier: Certifier,
    layers: LayerTicks,
    /// The deepest layer the scene's energy allows.
    energy_limit: EnergyLimit,
    audit: Audit,
    /// Scratch: the members that left their layer at a tick.
    left: Vec<u32>,
    /// Scratch: the payloads of the penalty events of one tick.
    batch: Vec<u32>,
    /// Scratch: the pairs contingent on the vertices of a kick.
    contingent: Vec<u32>,
    /// The counters kept here; the certifier keeps its own ([`Self::stats`] joins them).
    stats: ContactStats,
    /// Speculative scheduling (`contact.scheduler = "speculative"`): no certificates; layers
    /// are switched on by [`Self::switch_on_speculatively`], and every change of a pair's
    /// layers and every vertex a layer tick kicks is logged for the window's check.
    speculative: Option<SpeculativeLog>,
    /// Speculative windows committed, rolled back and probed.
    windows: WindowCounts,
}

/// The broad phase of [`Contact`] and what drives it: its window, its event, and the scratch
/// of the pairs it finds.
#[derive(Debug)]
struct BroadDriving {
    boxes: BroadPhase,
    /// How far ahead a horizon rebuild looks.
    window: f64,
    event: EventId,
    /// Scratch: the feature pairs found.
    found: Vec<PairKey>,
    /// Scratch: the contact pairs standing for `found`.
    found_pairs: Vec<ContactKey>,
    /// `0..n`, the stencil of whole-mesh events.
    all_vertices: Vec<u32>,
    /// Whether the broad phase short-circuits at the next all-vertex event
    /// (`speed.short_circuit`).
    short_circuit: bool,
}

/// What a speculative window needs to know about the layers' part in it (see
/// [`Contact::switch_on_speculatively`]).
#[derive(Clone, Debug, Default)]
pub(super) struct SpeculativeLog {
    /// Each change of a feature pair's active layers in the window, in order.
    pub(super) layers: Vec<LayerChange>,
    /// The vertices the last layer tick kicked.
    pub(super) kicked: Vec<u32>,
}

/// A feature pair's number of active layers changing at a time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct LayerChange {
    /// The pair.
    pub(super) key: PairKey,
    /// When.
    pub(super) time: f64,
    /// Active layers before the change.
    pub(super) before: u32,
    /// Active layers after it.
    pub(super) after: u32,
}

/// The contact state a speculative window changes: restored when the window is run again.
#[derive(Clone, Debug)]
pub(super) struct ContactCheckpoint {
    pairs: PairTable,
    layers: LayerTicks,
    energy_limit: EnergyLimit,
    stats: ContactStats,
    /// The length of the window's layer log then.
    layer_log: usize,
}

/// Settings the contact subsystem needs from the scene.
#[derive(Clone, Debug)]
pub(super) struct ContactSetup {
    /// The objects' slices of the global buffers, to name pairs in messages.
    pub(super) objects: Vec<ObjectRange>,
    /// The layers' law: thicknesses, stiffnesses, clocks, restitution and friction.
    pub(super) law: LayerLaw,
    /// How far ahead a broad-phase horizon rebuild looks.
    pub(super) window: f64,
    pub(super) broad_phase: BroadPhaseKind,
    /// Adaptive k-DOP axis ordering in the broad phase (`speed.axis_ordering`).
    pub(super) axis_ordering: bool,
    /// Slabs scheduled on fuzzy trajectories with this quality loss (`speed.fuzzy_trajectories`
    /// and `speed.quality_loss`), or `None`.
    pub(super) quality_loss: Option<f64>,
    /// Broad-phase certificates stop at the next all-vertex event (`speed.short_circuit`).
    pub(super) short_circuit: bool,
    /// Slab certificates beyond the next all-vertex event stay out of the queue
    /// (`speed.parking`).
    pub(super) parking: bool,
    /// Contact pairs of vertex-disjoint triangles rather than of their feature pairs
    /// (`speed.triangle_pairs`).
    pub(super) triangle_pairs: bool,
    /// The scene's total energy at the start (kinetic, elastic, gravitational), or `None` when
    /// scripted motion or prescribed forces put in work ([`energy_limit`]).
    pub(super) start_energy: Option<f64>,
    /// Layers are found by speculative windows, not certificates (`contact.scheduler`).
    pub(super) speculative: bool,
    /// Gravity (cm/s^2), whose work adds to the energy available.
    pub(super) gravity: DVec3,
    /// Per vertex: the longest interval between the regular kicks that load it (0 for fixed
    /// and scripted vertices), over which its pairs' static friction is budgeted.
    pub(super) kick_clocks: Vec<f64>,
}

/// A pair closer than `eta1` at the start.
#[derive(Debug)]
pub(super) struct TooClose {
    pub(super) key: PairKey,
    pub(super) verts: [u32; 4],
    pub(super) distance: f64,
}

impl Contact {
    /// Builds the subsystem, finds the initial pairs and schedules their slabs. Fails with the
    /// closest offending pair if two primitives start closer than `eta1`.
    pub(super) fn new(
        setup: ContactSetup,
        edges: Vec<[u32; 2]>,
        triangles: TriangleList,
        state: &VertexState,
        sched: &mut Scheduler<'_>,
    ) -> Result<Self, TooClose> {
        let n = state.len();
        let m_min = (0..n)
            .filter(|&i| state.inv_mass[i] > 0.0)
            .map(|i| state.mass[i])
            .fold(f64::INFINITY, f64::min);
        let triangle_pairs = setup
            .triangle_pairs
            .then(|| TriangleTopology::new(n, &edges, triangles.clone()));
        let owners = FeatureOwners::new(n, triangles.clone());
        let mut boxes = BroadPhase::new(
            setup.broad_phase,
            edges,
            triangles,
            state,
            setup.law.schedule.eta1,
        );
        boxes.set_adaptive_axes(setup.axis_ordering);
        let broad_event = sched.table.insert(EventKind::BroadPhase, 0).id;
        let keeps = Keeps {
            multiplicity: setup.triangle_pairs,
            budget: setup.quality_loss.is_some(),
        };
        let mut contact = Self {
            schedule: setup.law.schedule,
            broad: BroadDriving {
                boxes,
                window: setup.window,
                event: broad_event,
                found: Vec::new(),
                found_pairs: Vec::new(),
                all_vertices: (0..n as u32).collect(),
                short_circuit: setup.short_circuit,
            },
            triangle_pairs,
            owners,
            pairs: PairTable::new(n, keeps, setup.objects),
            certifier: Certifier::new(setup.law.schedule, setup.quality_loss, setup.parking),
            layers: LayerTicks::new(setup.law, setup.kick_clocks, m_min),
            energy_limit: EnergyLimit::new(setup.start_energy, setup.gravity),
            audit: Audit::default(),
            left: Vec::new(),
            batch: Vec::new(),
            contingent: Vec::new(),
            stats: ContactStats {
                min_distance: f64::INFINITY,
                ..ContactStats::default()
            },
            speculative: setup.speculative.then(SpeculativeLog::default),
            windows: WindowCounts::default(),
        };
        let mut found = Vec::new();
        contact
            .broad
            .boxes
            .rebuild(state, 0.0, setup.window, false, &mut |k| found.push(k));
        found.sort_unstable();
        found.dedup();
        let mut worst: Option<TooClose> = None;
        for &key in &found {
            let verts = contact.feature_verts(key);
            let d = feature_distance(key, &verts.map(|v| state.x[v as usize]));
            if d < contact.schedule.eta(1) && worst.as_ref().is_none_or(|w| d < w.distance) {
                worst = Some(TooClose {
                    key,
                    verts,
                    distance: d,
                });
            }
        }
        if let Some(w) = worst {
            return Err(w);
        }
        if contact.speculative.is_some() {
            return Ok(contact);
        }
        contact.adopt(found, state, 0.0, sched);
        sched
            .queue
            .push(contact.broad.event, contact.broad.boxes.next_time());
        Ok(contact)
    }

    /// The broad phase (for tests of the engine).
    #[cfg(test)]
    pub(super) fn broad_phase(&self) -> &BroadPhase {
        &self.broad.boxes
    }

    /// The four vertices of a feature pair, side A first.
    fn feature_verts(&self, key: PairKey) -> [u32; 4] {
        match key {
            PairKey::VertexTriangle(v, t) => {
                let [a, b, c] = self.broad.boxes.triangles()[t as usize];
                [v, a, b, c]
            }
            PairKey::EdgeEdge(e, f) => {
                let [a, b] = self.broad.boxes.edges()[e as usize];
                let [c, d] = self.broad.boxes.edges()[f as usize];
                [a, b, c, d]
            }
        }
    }

    /// The vertices of a contact pair (the last two unused for a feature pair).
    fn verts_of(&self, key: ContactKey) -> [u32; 6] {
        match key {
            ContactKey::Feature(f) => {
                let [a, b, c, d] = self.feature_verts(f);
                [a, b, c, d, a, a]
            }
            ContactKey::Triangles(s, t) => self.topology().verts(s, t),
        }
    }

    /// The triangle adjacency, which exists whenever a triangle pair does.
    fn topology(&self) -> &TriangleTopology {
        self.triangle_pairs
            .as_ref()
            .expect("triangle pairs exist only with speed.triangle_pairs")
    }

    /// Whether some feature pair that contact pair `key` stands for overlaps in the broad phase.
    fn overlaps(&self, key: ContactKey) -> bool {
        match key {
            ContactKey::Feature(f) => self.broad.boxes.overlaps(f),
            ContactKey::Triangles(s, t) => self
                .topology()
                .features(s, t)
                .into_iter()
                .any(|f| self.broad.boxes.overlaps(f)),
        }
    }

    /// The contact pairs that stand for the feature pairs `found` (the same keys unless
    /// triangle pairs are on), sorted and without repeats, into `self.broad.found_pairs`.
    fn contact_keys(&mut self, found: &[PairKey]) {
        let mut keys = std::mem::take(&mut self.broad.found_pairs);
        keys.clear();
        match &self.triangle_pairs {
            None => keys.extend(found.iter().map(|&k| ContactKey::Feature(k))),
            Some(topology) => {
                for &k in found {
                    topology.contact_keys(k, &mut keys);
                }
            }
        }
        keys.sort_unstable();
        keys.dedup();
        self.broad.found_pairs = keys;
    }

    /// Adds the newly found candidate pairs (in a canonical order, so pair ids do not depend on
    /// how they were found) and keeps the buffer for reuse.
    fn adopt(
        &mut self,
        mut found: Vec<PairKey>,
        state: &VertexState,
        t: f64,
        sched: &mut Scheduler<'_>,
    ) {
        if self.triangle_pairs.is_none() {
            // Most were found before and stay pairs: only the new ones need sorting. Looking
            // them up reads the pair table only, so many are looked up on the pool.
            let pairs = &self.pairs;
            let new = |k: &PairKey| pairs.id(&ContactKey::Feature(*k)).is_none();
            if found.len() < 2 * ADOPT_TASK {
                found.retain(new);
            } else {
                found = (found.par_iter().with_min_len(ADOPT_TASK))
                    .map_init(|| zone!("list_task"), |_, k| new(k).then_some(*k))
                    .flatten_iter()
                    .collect();
            }
        }
        found.sort_unstable();
        found.dedup();
        self.contact_keys(&found);
        let keys = std::mem::take(&mut self.broad.found_pairs);
        for &key in &keys {
            self.add_pair(key, state, t, sched);
        }
        self.broad.found_pairs = keys;
        self.broad.found = found;
    }

    fn add_pair(
        &mut self,
        key: ContactKey,
        state: &VertexState,
        t: f64,
        sched: &mut Scheduler<'_>,
    ) {
        if self.pairs.id(&key).is_some() {
            return;
        }
        let verts = self.verts_of(key);
        let id = self.pairs.insert(key, verts, t, |id| {
            sched.table.insert(EventKind::Certificate, id).id
        });
        if let ContactKey::Triangles(s, t) = key {
            self.pairs.multiplicity[id as usize] = self.topology().multiplicities(s, t);
            self.stats.triangle_pairs += 1;
        }
        self.stats.certificates_peak = self.stats.certificates_peak.max(self.pairs.live_count());
        self.certifier
            .certify(&mut self.pairs, id, state, t, sched.queue);
    }

    fn remove_pair(&mut self, id: u32, sched: &mut Scheduler<'_>) {
        let cert = self.pairs.remove(id);
        sched.queue.remove(cert);
        let _ = sched.table.remove(sched.table.handle(cert));
    }

    /// After the velocities of `vertices` changed at `t`: re-sweep their boxes (new pairs get
    /// slabs) and re-time every slab they support.
    pub(super) fn after_kick(
        &mut self,
        vertices: &[u32],
        state: &VertexState,
        t: f64,
        sched: &mut Scheduler<'_>,
    ) {
        if self.speculative.is_some() {
            return;
        }
        let _zone = zone!("reschedule");
        self.audit.boxes(&self.broad.boxes, state, t);
        self.sweep(vertices, state, t, sched);
        self.reschedule(
            |pairs, ids| pairs.contingent(vertices, ids),
            state,
            t,
            sched,
        );
    }

    /// Re-times the slabs of the pairs `select` puts into its list.
    fn reschedule(
        &mut self,
        select: impl FnOnce(&mut PairTable, &mut Vec<u32>),
        state: &VertexState,
        t: f64,
        sched: &mut Scheduler<'_>,
    ) {
        let mut ids = std::mem::take(&mut self.contingent);
        select(&mut self.pairs, &mut ids);
        self.certifier.reschedule(
            &mut self.pairs,
            &mut self.audit,
            &ids,
            state,
            t,
            sched.queue,
        );
        self.contingent = ids;
    }

    /// Re-sweeps the boxes of `vertices` and adopts the candidate pairs that appear.
    fn sweep(&mut self, vertices: &[u32], state: &VertexState, t: f64, sched: &mut Scheduler<'_>) {
        let mut found = std::mem::take(&mut self.broad.found);
        found.clear();
        self.broad
            .boxes
            .update(state, t, vertices, &mut |k| found.push(k));
        self.adopt(found, state, t, sched);
        sched
            .queue
            .update(self.broad.event, self.broad.boxes.next_time());
    }

    /// Whether [`after_global_kick`](Self::after_global_kick) uses the time of the next
    /// all-vertex event (parking or short-circuiting is on).
    pub(super) fn schedules_against_all_vertex_events(&self) -> bool {
        self.certifier.parks() || self.broad.short_circuit
    }

    /// After every vertex's velocity may have changed at `t` (a super-element or gravity tick):
    /// re-sweep every box (only the vertices that leave theirs cost broad-phase work) and re-time
    /// every slab (the event-event edge of a whole-mesh event: all certificates are contingent).
    /// `next` is the next such event: with parking, slabs failing after it stay out of the
    /// queue; with the short-circuit, the broad phase certifies up to it and re-times now the
    /// pairs it cut short here.
    pub(super) fn after_global_kick(
        &mut self,
        state: &VertexState,
        t: f64,
        next: f64,
        sched: &mut Scheduler<'_>,
    ) {
        if self.speculative.is_some() {
            return;
        }
        let _zone = zone!("reschedule_all");
        self.audit.boxes(&self.broad.boxes, state, t);
        self.certifier.park_after(next);
        if self.broad.short_circuit {
            self.broad.boxes.short_circuit(t, next);
        }
        let all = std::mem::take(&mut self.broad.all_vertices);
        self.sweep(&all, state, t, sched);
        self.broad.all_vertices = all;
        let every_live_pair = |pairs: &mut PairTable, ids: &mut Vec<u32>| {
            ids.clear();
            ids.extend((0..pairs.slots()).filter(|&id| pairs.live[id as usize]));
        };
        self.reschedule(every_live_pair, state, t, sched);
    }

    fn rebuild(&mut self, state: &VertexState, t: f64, end: f64, sched: &mut Scheduler<'_>) {
        let mut found = std::mem::take(&mut self.broad.found);
        found.clear();
        let in_contact = self.pairs.penalized().next().is_some();
        self.broad
            .boxes
            .rebuild(state, t, end, in_contact, &mut |k| found.push(k));
        self.adopt(found, state, t, sched);
    }

    /// A broad-phase event. At the end of a window: sweep every box over the next window, drop
    /// pairs whose boxes no longer overlap and that have no active layer. Before it (kinetic
    /// broad phases): process the certificates due, adopt the pairs handed over and drop the
    /// pairs taken back that have no active layer and no other overlapping leaves.
    pub(super) fn fire_broad_phase(
        &mut self,
        state: &VertexState,
        t: f64,
        sched: &mut Scheduler<'_>,
    ) {
        let _zone = zone!("broad_phase");
        self.stats.broad_phase_events += 1;
        self.audit.boxes(&self.broad.boxes, state, t);
        if t >= self.broad.boxes.window_end() {
            let end = t + self.broad.window;
            self.rebuild(state, t, end, sched);
            let mut found = std::mem::take(&mut self.broad.found);
            found.clear();
            self.broad
                .boxes
                .advance(t, &mut |k| found.push(k), &mut |_| {});
            self.adopt(found, state, t, sched);
            // Whether a pair is stale reads only the broad phase: the pairs are looked at in
            // parallel, then the stale ones removed in id order.
            let stale: Vec<u32> = (0..self.pairs.slots())
                .into_par_iter()
                .with_min_len(STALE_TASK)
                .map_init(
                    || zone!("list_task"),
                    |_, id| {
                        let i = id as usize;
                        let stale = self.pairs.live[i]
                            && self.pairs.active[i] == 0
                            && !self.overlaps(self.pairs.key[i]);
                        stale.then_some(id)
                    },
                )
                .flatten_iter()
                .collect();
            for id in stale {
                self.remove_pair(id, sched);
            }
            self.stats.broad_phase = self.broad.boxes.stats();
        } else {
            let mut found = std::mem::take(&mut self.broad.found);
            found.clear();
            let mut lost = Vec::new();
            self.broad
                .boxes
                .advance(t, &mut |k| found.push(k), &mut |k| lost.push(k));
            self.adopt(found, state, t, sched);
            lost.sort_unstable();
            lost.dedup();
            self.contact_keys(&lost);
            let keys = std::mem::take(&mut self.broad.found_pairs);
            for &key in &keys {
                if let Some(id) = self.pairs.id(&key) {
                    if self.pairs.active[id as usize] == 0 && !self.overlaps(key) {
                        self.remove_pair(id, sched);
                    }
                }
            }
            self.broad.found_pairs = keys;
        }
        sched
            .queue
            .push(self.broad.event, self.broad.boxes.next_time());
    }

    /// Pair `id` in a user's terms: its two primitives and their objects.
    pub(super) fn describe_pair(&self, id: u32) -> String {
        self.pairs.describe(id)
    }

    /// A slab failed: activate its layer if the pair is close, otherwise certify again.
    pub(super) fn fire_slab(
        &mut self,
        id: u32,
        state: &VertexState,
        t: f64,
        sched: &mut Scheduler<'_>,
    ) -> Result<(), RunError> {
        let _zone = zone!("slab");
        self.stats.slab_events += 1;
        let i = id as usize;
        let motion = self.pairs.kinematics(id, state, t);
        let closest = motion.closest();
        let d = closest.distance;
        self.stats.min_distance = self.stats.min_distance.min(d);
        let layer = self.pairs.certified[i];
        // A slab moves with its pair's velocities as they were when it was built, so it can fail
        // with the pair still outside its activation distance's reach of the layer; prescribed
        // motion that has not reached the layer is let go and certified again.
        let early_kinematic =
            self.is_kinematic(id, state) && d >= KINEMATIC_REACH * self.schedule.eta(layer);
        if d < ACTIVATION * self.schedule.eta(layer) && !early_kinematic {
            self.switch_on(id, layer, &motion, d, state, t, sched)?;
        }
        // Switching a layer on moves no vertex: the pair's kinematics at `t` still hold.
        (self.certifier).certify_at(&mut self.pairs, id, &motion, &closest, t, sched.queue);
        Ok(())
    }

    /// Switches layer `layer` of pair `id` on at `t`, the pair moving as `motion`, `d` apart:
    /// an error if the pair is already inside it, if fixed or scripted primitives are about to
    /// touch, or if the layers would hold more energy than the scene has had.
    #[allow(clippy::too_many_arguments)]
    fn switch_on(
        &mut self,
        id: u32,
        layer: u32,
        motion: &Motion,
        d: f64,
        state: &VertexState,
        t: f64,
        sched: &mut Scheduler<'_>,
    ) -> Result<(), RunError> {
        if d < self.schedule.eta(layer) {
            return Err(self.breach(id, layer, d, t, state));
        }
        let near = ACTIVATION * self.schedule.eta(layer);
        if let Some(vertices) = self.kinematic_feature(id, motion, state, near) {
            return Err(RunError::KinematicContact {
                time: t,
                pair: self.pairs.describe(id),
                vertices,
            });
        }
        // Checked where the layer is needed: a speculative window switches it on farther out,
        // where the layers above it may hold nothing yet.
        let checked_at = d.min(near);
        if let Err((held, available)) =
            (self.energy_limit).check(&self.schedule, layer, checked_at, state, t)
        {
            let pair = self.pairs.describe(id);
            return Err(energy_limit::runaway(t, pair, layer, held, available));
        }
        self.layers.activate(&mut self.pairs, id, layer, t, sched)?;
        self.pairs.certified[id as usize] = layer + 1;
        if let Some(log) = &mut self.speculative {
            if let ContactKey::Feature(key) = self.pairs.key[id as usize] {
                log.layers.push(LayerChange {
                    key,
                    time: t,
                    before: layer - 1,
                    after: layer,
                });
            }
        }
        Ok(())
    }

    /// Whether every vertex of pair `id` is fixed or scripted: no penalty force can move it.
    fn is_kinematic(&self, id: u32, state: &VertexState) -> bool {
        (self.pairs.pair_verts(id).iter()).all(|&v| state.inv_mass[v as usize] == 0.0)
    }

    /// A feature pair of pair `id` closer than `near` whose four vertices are all fixed or
    /// scripted: no penalty force can keep it apart.
    fn kinematic_feature(
        &self,
        id: u32,
        motion: &Motion,
        state: &VertexState,
        near: f64,
    ) -> Option<[u32; 4]> {
        let verts = &self.pairs.verts[id as usize];
        let kinematic = |l: [usize; 4]| l.iter().all(|&k| state.inv_mass[verts[k] as usize] == 0.0);
        match motion.key {
            ContactKey::Feature(_) => kinematic([0, 1, 2, 3]).then(|| *first_four(verts)),
            ContactKey::Triangles(..) => TRIANGLE_PAIR_FEATURES
                .into_iter()
                .find(|&f| kinematic(f.verts()) && local_feature_distance(f, &motion.x) < near)
                .map(|f| f.verts().map(|k| verts[k])),
        }
    }

    /// The error for a pair found inside a layer that is not active: a time-resolution stop when
    /// one rounding of `t` moves the pair by more than the slab margin, otherwise a bug.
    fn breach(&self, id: u32, layer: u32, d: f64, t: f64, state: &VertexState) -> RunError {
        let i = id as usize;
        let speed = self
            .pairs
            .pair_verts(id)
            .iter()
            .map(|&v| state.v[v as usize].length())
            .fold(0.0, f64::max);
        let eta = self.schedule.eta(layer);
        let rounding = 2.0 * speed * t.abs() * f64::EPSILON;
        if rounding > (SLAB_MARGIN - 1.0) * eta {
            return RunError::TimeResolution {
                time: t,
                pair: self.pairs.describe(id),
                layer,
                speed,
            };
        }
        RunError::Internal {
            time: t,
            event: self.pairs.cert[i].0,
            message: format!(
                "pair {} reached distance {d:e} inside layer {layer} (eta {eta:e}) before the \
                 layer was active",
                self.pairs.describe(i as u32),
            ),
        }
    }

    /// A tick of the penalty group whose event has payload `group`, just popped (one layer's
    /// super-event, or one pair's layer together with the other per-pair events of its layer
    /// due at `t`): the members' impulses are applied, the kicked vertices' certificates are
    /// re-timed, and members that have left their deepest layer are dropped (lazy deactivation)
    /// and certified again (logged, under speculative scheduling). Returns how many more events
    /// than the one popped the tick processed.
    pub(super) fn fire_layer(
        &mut self,
        group: u32,
        state: &mut VertexState,
        t: f64,
        sched: &mut Scheduler<'_>,
    ) -> Result<usize, RunError> {
        let _zone = zone!("penalty");
        let surfaces = Surfaces {
            owners: &self.owners,
            topology: self.triangle_pairs.as_ref(),
        };
        let mut batch = std::mem::take(&mut self.batch);
        self.layers.due_together(group, t, sched, &mut batch);
        let tick = self.layers.tick(&batch, &self.pairs, surfaces, state, t);
        let extra = batch.len() - 1;
        self.batch = batch;
        let tick = tick?;
        if let Some(log) = &mut self.speculative {
            log.kicked.clone_from(&tick.kicked);
        } else if !tick.kicked.is_empty() {
            self.after_kick(&tick.kicked, state, t, sched);
        }
        let mut left = std::mem::take(&mut self.left);
        let leave = if self.speculative.is_some() {
            Leave {
                factor: SPECULATIVE_LEAVE,
                idle_factor: SPECULATIVE_LEAVE_IDLE,
                idle_from: IDLE_LEAVE_FROM,
            }
        } else {
            Leave::always(1.0)
        };
        (self.layers).finish(tick, &mut self.pairs, sched.queue, &mut left, leave);
        for &id in &left {
            if self.speculative.is_some() {
                self.left_speculatively(id, t);
            } else {
                (self.certifier).certify(&mut self.pairs, id, state, t, sched.queue);
            }
        }
        self.left = left;
        Ok(extra)
    }

    /// Speculative scheduling: pair `id` has just left its deepest layer at `t` (beyond its
    /// activation distance, see [`SPECULATIVE_LEAVE`]): the change is logged.
    fn left_speculatively(&mut self, id: u32, t: f64) {
        let i = id as usize;
        if let (ContactKey::Feature(key), Some(log)) = (self.pairs.key[i], &mut self.speculative) {
            let after = self.pairs.active[i];
            log.layers.push(LayerChange {
                key,
                time: t,
                before: after + 1,
                after,
            });
        }
    }

    /// Speculative scheduling: the log of the current window (`None` with certificates).
    pub(super) fn speculative_log(&mut self) -> Option<&mut SpeculativeLog> {
        self.speculative.as_mut()
    }

    /// Speculative scheduling: switches feature pair `key`'s layers on at `t` up to `layer`
    /// (each checked as a failing slab's would be), adding the pair if it is new. Nothing
    /// happens if the layers are on already, and no layer is switched on once the pair is
    /// inside it: the layer was found needed on paths that have changed since, and the
    /// window's check finds the pair again, earlier.
    pub(super) fn switch_on_speculatively(
        &mut self,
        key: PairKey,
        layer: u32,
        state: &VertexState,
        t: f64,
        sched: &mut Scheduler<'_>,
    ) -> Result<(), RunError> {
        let key = ContactKey::Feature(key);
        let id = match self.pairs.id(&key) {
            Some(id) => id,
            None => {
                let verts = self.verts_of(key);
                self.pairs.insert(key, verts, t, |id| {
                    sched.table.insert(EventKind::Certificate, id).id
                })
            }
        };
        let motion = self.pairs.kinematics(id, state, t);
        let d = motion.distance();
        self.stats.min_distance = self.stats.min_distance.min(d);
        if self.is_kinematic(id, state) {
            // The window's check found prescribed motion within the layer's reach
            // (`KINEMATIC_REACH`), where it will be again whatever the layers do.
            return Err(RunError::KinematicContact {
                time: t,
                pair: self.pairs.describe(id),
                vertices: *first_four(&self.pairs.verts[id as usize]),
            });
        }
        while self.pairs.active[id as usize] < layer {
            let next = self.pairs.active[id as usize] + 1;
            if d < self.schedule.eta(next) {
                break;
            }
            self.switch_on(id, next, &motion, d, state, t, sched)?;
        }
        Ok(())
    }

    /// The number of active layers of feature pair `key` (0 for a pair not in the table).
    pub(super) fn active_layers(&self, key: PairKey) -> u32 {
        self.pairs
            .id(&ContactKey::Feature(key))
            .map_or(0, |id| self.pairs.active[id as usize])
    }

    /// Speculative scheduling: drops the pairs with no active layer (a window found them; the
    /// next window finds them again if they come close).
    pub(super) fn drop_inactive(&mut self, sched: &mut Scheduler<'_>) {
        for id in 0..self.pairs.slots() {
            let i = id as usize;
            if self.pairs.live[i] && self.pairs.active[i] == 0 {
                self.remove_pair(id, sched);
            }
        }
    }

    /// The state a speculative window changes, to restore if it is run again.
    pub(super) fn checkpoint(&self) -> ContactCheckpoint {
        ContactCheckpoint {
            pairs: self.pairs.clone(),
            layers: self.layers.clone(),
            energy_limit: self.energy_limit.clone(),
            stats: self.stats.clone(),
            layer_log: self.speculative.as_ref().map_or(0, |log| log.layers.len()),
        }
    }

    /// Restores the state of `checkpoint`, the window's layer log included.
    pub(super) fn restore(&mut self, checkpoint: &ContactCheckpoint) {
        self.pairs.clone_from(&checkpoint.pairs);
        self.layers.clone_from(&checkpoint.layers);
        self.energy_limit.clone_from(&checkpoint.energy_limit);
        self.stats.clone_from(&checkpoint.stats);
        if let Some(log) = &mut self.speculative {
            log.layers.truncate(checkpoint.layer_log);
        }
    }

    /// Adds one committed speculative window's counts.
    pub(super) fn count_window(&mut self, window: WindowCounts) {
        let w = &mut self.windows;
        w.committed += window.committed;
        w.rollbacks += window.rollbacks;
        w.probes += window.probes;
        w.rolled_back_events += window.rolled_back_events;
    }

    /// With the work closure on, follows the ticks of `forces` (each force event's clock and
    /// the vertices it kicks, by event index) so that the closure also takes out the error the
    /// layer impulses make in them (`contact.closure_forces`, `force_phases.rs`).
    pub(super) fn follow_forces(&mut self, forces: &[(f64, Vec<u32>)], state: &VertexState) {
        let closure = self.layers.closure();
        if closure.enabled() {
            closure.follow_forces(ForcePhases::new(forces, state));
        }
    }

    /// With the work closure on and `cor = 1`, closes what the pairs leave open when two of
    /// `objects` part (`contact.closure_objects`, `object_closure.rs`).
    pub(super) fn close_across_objects(&mut self, objects: Vec<ObjectRange>) {
        let eta1 = self.schedule.eta1;
        self.layers.closure().close_across_objects(objects, eta1);
    }

    /// Call before force event `f` ticks (see [`Self::follow_forces`]).
    pub(super) fn before_force_tick(&mut self, f: usize, state: &VertexState) {
        if let Some(phases) = self.layers.closure().phases() {
            phases.before_tick(f, state);
        }
    }

    /// Call after force event `f` ticked at `t` (see [`Self::follow_forces`]).
    pub(super) fn after_force_tick(&mut self, f: usize, state: &VertexState, t: f64) {
        if let Some(phases) = self.layers.closure().phases() {
            phases.after_tick(f, state, t);
        }
    }

    /// The layer schedule.
    pub(super) fn schedule(&self) -> &LayerSchedule {
        &self.schedule
    }

    /// Global edge and triangle lists.
    pub(super) fn primitives(&self) -> (&[[u32; 2]], &[[u32; 3]]) {
        (self.broad.boxes.edges(), self.broad.boxes.triangles())
    }

    /// Contact statistics for `stats.json`.
    pub(super) fn stats(&self) -> ContactStats {
        let c = self.certifier.stats;
        let l = &self.layers.stats;
        ContactStats {
            reschedules: c.reschedules,
            retimes: c.retimes,
            parked: c.parked,
            deepest_layer: l.deepest_layer,
            deepest_acting_layer: l.deepest_acting_layer,
            penalty_events_per_layer: l.penalty_events_per_layer.clone(),
            penalty_pair_ticks_per_layer: l.penalty_pair_ticks_per_layer.clone(),
            activations_per_layer: l.activations_per_layer.clone(),
            object_closings: l.object_closings,
            min_distance: self.stats.min_distance.min(l.min_distance),
            windows: self.windows.committed,
            rollbacks: self.windows.rollbacks,
            probes: self.windows.probes,
            rolled_back_events: self.windows.rolled_back_events,
            ..self.stats.clone()
        }
    }

    /// Turns the interval audit on: every certificate is checked whenever its trajectory is about
    /// to change (see [`Contact::audit`]).
    pub(super) fn set_auditing(&mut self, on: bool) {
        self.audit.on = on;
    }

    /// The first breach the interval audit found since the last call.
    pub(super) fn take_breach(&mut self) -> Option<String> {
        self.audit.take()
    }

    /// Live pairs with a penalty layer active: their vertices and deepest active layer.
    pub(super) fn penalized(&self) -> impl Iterator<Item = (&[u32], u32)> + '_ {
        self.pairs.penalized()
    }

    /// The clock of layer `l`, which has been active (so its clock is known).
    pub(super) fn active_clock(&self, l: u32) -> f64 {
        self.layers.active_clock(l)
    }

    /// Records `energy` put into the free vertices from outside the run.
    pub(super) fn energy_put_in(&mut self, energy: f64) {
        self.energy_limit.add(energy);
    }

    /// Penalty energy of every active layer at `positions`.
    pub(super) fn energy(&self, positions: &[DVec3]) -> f64 {
        let surfaces = Surfaces {
            owners: &self.owners,
            topology: self.triangle_pairs.as_ref(),
        };
        self.layers.energy(&self.pairs, surfaces, positions)
    }

    /// The full audit at time `t` (see [`audit::full`]).
    pub(super) fn audit(
        &self,
        state: &VertexState,
        t: f64,
        queue: &EventQueue,
    ) -> Result<(), String> {
        audit::full(
            &self.pairs,
            &self.schedule,
            &self.broad.boxes,
            state,
            t,
            queue,
        )
    }
}
