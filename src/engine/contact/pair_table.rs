//! The pair table: every candidate pair's identity, vertices, certificate and layers, as a
//! structure of arrays indexed by pair id; the index from [`ContactKey`] to id; freed ids for
//! reuse; and the contingency from each vertex to the pairs whose certificates it supports.

use glam::DVec3;
use hashbrown::HashMap;

use super::motion::Motion;
use crate::engine::contingency::Contingency;
use crate::events::EventId;
use crate::kds::slab::{no_budget, ClosingBudget, Slab};
use crate::model::{describe_vertices, ObjectRange};
use crate::penalty::ContactKey;
use crate::state::VertexState;

/// The candidate pairs (see the module docs). The arrays are indexed by pair id; a freed id's
/// slot stays until a new pair reuses it (`live` says which are in use).
#[derive(Clone, Debug)]
pub(super) struct PairTable {
    pub(super) key: Vec<ContactKey>,
    /// `[p, a, b, c]` for VT, `[p0, p1, q0, q1]` for EE (then two unused slots),
    /// `[a0, a1, a2, b0, b1, b2]` for a triangle pair.
    pub(super) verts: Vec<[u32; 6]>,
    /// For a triangle pair, the number of triangle pairs each of its feature pairs lies in
    /// ([`TriangleTopology::multiplicities`](crate::engine::triangle_pairs::TriangleTopology));
    /// unused for a feature pair, and empty (30 bytes a pair saved) without triangle-pair
    /// contact.
    pub(super) multiplicity: Vec<[u16; 15]>,
    /// The layer the slab certifies; layers below it are active.
    pub(super) certified: Vec<u32>,
    pub(super) slab: Vec<Option<Slab>>,
    /// Time at which `slab.point` is exact.
    pub(super) slab_time: Vec<f64>,
    /// The fuzzy-trajectory budget the slab was scheduled with (a feature pair uses the first
    /// four); empty (48 bytes a pair saved) without fuzzy trajectories.
    pub(super) budget: Vec<ClosingBudget<6>>,
    /// The slab-failure event.
    pub(super) cert: Vec<EventId>,
    /// Number of active layers: `1..=active` are.
    pub(super) active: Vec<u32>,
    /// Whether the slot is in use.
    pub(super) live: Vec<bool>,
    free: Vec<u32>,
    index: HashMap<ContactKey, u32>,
    contingency: Contingency,
    /// Whether pairs keep multiplicities (triangle pairs) and budgets (fuzzy trajectories).
    keeps: Keeps,
    /// The objects' slices of the global buffers, to name pairs in messages.
    objects: Vec<ObjectRange>,
}

/// Which optional columns the table keeps.
#[derive(Clone, Copy, Debug)]
pub(super) struct Keeps {
    /// Triangle-pair multiplicities (`speed.triangle_pairs`).
    pub(super) multiplicity: bool,
    /// Fuzzy-trajectory budgets (`speed.fuzzy_trajectories`).
    pub(super) budget: bool,
}

impl PairTable {
    /// An empty table over `vertices` vertices.
    pub(super) fn new(vertices: usize, keeps: Keeps, objects: Vec<ObjectRange>) -> Self {
        Self {
            key: Vec::new(),
            verts: Vec::new(),
            multiplicity: Vec::new(),
            certified: Vec::new(),
            slab: Vec::new(),
            slab_time: Vec::new(),
            budget: Vec::new(),
            cert: Vec::new(),
            active: Vec::new(),
            live: Vec::new(),
            free: Vec::new(),
            index: HashMap::new(),
            contingency: Contingency::new(vertices),
            keeps,
            objects,
        }
    }

    /// The id of the live pair `key`.
    pub(super) fn id(&self, key: &ContactKey) -> Option<u32> {
        self.index.get(key).copied()
    }

    /// Number of live pairs.
    pub(super) fn live_count(&self) -> usize {
        self.index.len()
    }

    /// Number of slots, live or free: ids are below it.
    pub(super) fn slots(&self) -> u32 {
        self.key.len() as u32
    }

    /// Adds pair `key` on `verts` at time `t`, its certificate event made by `cert` from its id:
    /// certified for layer 1, no layer active, no slab yet. Returns its id (a freed one when
    /// there is).
    pub(super) fn insert(
        &mut self,
        key: ContactKey,
        verts: [u32; 6],
        t: f64,
        cert: impl FnOnce(u32) -> EventId,
    ) -> u32 {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.key.push(key);
                self.verts.push(verts);
                if self.keeps.multiplicity {
                    self.multiplicity.push([0; 15]);
                }
                self.certified.push(1);
                self.slab.push(None);
                self.slab_time.push(t);
                if self.keeps.budget {
                    self.budget.push(no_budget());
                }
                self.cert.push(EventId::INVALID);
                self.active.push(0);
                self.live.push(false);
                (self.key.len() - 1) as u32
            }
        };
        let i = id as usize;
        self.key[i] = key;
        self.verts[i] = verts;
        self.certified[i] = 1;
        self.active[i] = 0;
        self.live[i] = true;
        self.cert[i] = cert(id);
        self.index.insert(key, id);
        self.contingency.add(id, &verts[..key.vertex_count()]);
        id
    }

    /// Frees pair `id` (which has no active layer) and returns its certificate event, for the
    /// caller to take off the queue.
    pub(super) fn remove(&mut self, id: u32) -> EventId {
        let i = id as usize;
        debug_assert_eq!(self.active[i], 0);
        self.index.remove(&self.key[i]);
        self.contingency
            .remove(id, &self.verts[i][..self.key[i].vertex_count()]);
        self.live[i] = false;
        self.slab[i] = None;
        self.free.push(id);
        self.cert[i]
    }

    /// The live pairs whose certificates some of `vertices` support, into `ids`.
    pub(super) fn contingent(&mut self, vertices: &[u32], ids: &mut Vec<u32>) {
        self.contingency.contingent(vertices, ids);
    }

    /// Records pair `i`'s fuzzy-trajectory budget (nothing to keep without fuzzy trajectories).
    pub(super) fn set_budget(&mut self, i: usize, budget: ClosingBudget<6>) {
        if let Some(slot) = self.budget.get_mut(i) {
            *slot = budget;
        }
    }

    /// The vertices of pair `id` that it uses: four or six.
    pub(super) fn pair_verts(&self, id: u32) -> &[u32] {
        let i = id as usize;
        &self.verts[i][..self.key[i].vertex_count()]
    }

    /// `value(v)` for each vertex `v` of pair `id`, in six slots (zero past the pair's own).
    pub(super) fn gather(&self, id: u32, value: impl Fn(usize) -> DVec3) -> [DVec3; 6] {
        let mut out = [DVec3::ZERO; 6];
        for (slot, &v) in out.iter_mut().zip(self.pair_verts(id)) {
            *slot = value(v as usize);
        }
        out
    }

    /// Positions at `t` and velocities of a pair's vertices.
    pub(super) fn kinematics(&self, id: u32, state: &VertexState, t: f64) -> Motion {
        Motion {
            key: self.key[id as usize],
            x: self.gather(id, |v| state.position_at(v, t)),
            v: self.gather(id, |v| state.v[v]),
        }
    }

    /// Pair `id` in a user's terms: its two primitives, named by object.
    pub(super) fn describe(&self, id: u32) -> String {
        let i = id as usize;
        let verts = &self.verts[i];
        let a = self.key[i].a_count();
        format!(
            "{} and {}",
            describe_vertices(&self.objects, &verts[..a]),
            describe_vertices(&self.objects, &verts[a..self.key[i].vertex_count()])
        )
    }

    /// Vertex `v` in a user's terms.
    pub(super) fn describe_vertex(&self, v: u32) -> String {
        describe_vertices(&self.objects, &[v])
    }

    /// Live pairs with a penalty layer active: their vertices and deepest active layer.
    pub(super) fn penalized(&self) -> impl Iterator<Item = (&[u32], u32)> + '_ {
        (0..self.key.len())
            .filter(|&i| self.live[i] && self.active[i] > 0)
            .map(|i| (self.pair_verts(i as u32), self.active[i]))
    }
}
