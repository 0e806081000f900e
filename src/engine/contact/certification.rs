//! Certification: building each pair's separation slab, choosing when to look at it again
//! (its exact failure time, or a fuzzy schedule), parking certificates beyond the next
//! all-vertex event, and re-timing slabs in parallel after kicks.

use glam::DVec3;

use super::audit::Audit;
use super::motion::{within_budget_at_shape, Motion};
use super::pair_table::PairTable;
use crate::events::{EventId, EventQueue};
use crate::kds::slab::{no_budget, ClosestPoints, ClosingBudget};
use crate::penalty::layers::LayerSchedule;
use crate::profiling::zone;
use crate::state::VertexState;
use crate::team;

/// Slabs certify a gap this much wider than the layer, so that round-off in evaluating their
/// linear conditions can never let a pair reach `eta(l)` unannounced: when two sheets approach
/// face to face every slab condition fails at once, exactly at `d = eta`.
pub(super) const SLAB_MARGIN: f64 = 1.0 + 1e-9;

/// Reschedules compute their failure times in blocks of at least this many certificates, one
/// block a thread (so from twice as many on, in parallel).
const RETIME_BLOCK: usize = 256;

/// Pairs re-timed per chunk of [`Certifier::reschedule`]: bounds its scratch of re-timings (88
/// bytes a pair) while leaving each parallel chunk many times [`RETIME_BLOCK`].
const RESCHEDULE_CHUNK: usize = 8192;

/// Counters of certification, for `stats.json`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct CertificationStats {
    /// Certificates looked at after velocity changes.
    pub(super) reschedules: u64,
    /// Of those, the slabs actually re-timed.
    pub(super) retimes: u64,
    /// Slab certificates kept out of the queue beyond the next all-vertex event.
    pub(super) parked: u64,
}

/// The certification policies and their scratch (see the module docs).
#[derive(Debug)]
pub(super) struct Certifier {
    /// Layer thicknesses: a slab certifies its pair's certified layer.
    schedule: LayerSchedule,
    /// Fuzzy trajectories' quality loss `QL` (thesis §8.2), or `None` for exact schedules.
    quality_loss: Option<f64>,
    /// Whether to park certificates beyond the next all-vertex event (`speed.parking`).
    parking: bool,
    /// Slab certificates failing after this time are parked: the next all-vertex event, which
    /// re-times every slab (`+inf` while parking is off or before the first such event).
    park_after: f64,
    /// Scratch of [`Self::reschedule`]: the new slabs of one chunk and the queue updates.
    retimed: Vec<Option<Retimed>>,
    updates: Vec<(EventId, f64)>,
    pub(super) stats: CertificationStats,
}

/// A slab advanced to the re-timing time (only its point moves: its normal, velocity and gap
/// stand), its new failure time, and whether the audit found it broken at that time.
#[derive(Clone, Copy, Debug)]
struct Retimed {
    point: DVec3,
    when: f64,
    budget: ClosingBudget<6>,
    breach: bool,
}

impl Certifier {
    /// Certification of layers `schedule`, on fuzzy trajectories with `quality_loss` (or exact
    /// schedules), parking when `parking` (a fuzzy slab keeps its time across all-vertex events,
    /// so one parked there would never be queued again: parking needs exact schedules).
    pub(super) fn new(schedule: LayerSchedule, quality_loss: Option<f64>, parking: bool) -> Self {
        Self {
            schedule,
            quality_loss,
            parking: parking && quality_loss.is_none(),
            park_after: f64::INFINITY,
            retimed: Vec::new(),
            updates: Vec::new(),
            stats: CertificationStats::default(),
        }
    }

    /// Whether certificates are parked beyond the next all-vertex event.
    pub(super) fn parks(&self) -> bool {
        self.parking
    }

    /// Parks certificates failing after `next`, the next all-vertex event (with parking on).
    pub(super) fn park_after(&mut self, next: f64) {
        if self.parking {
            self.park_after = next;
        }
    }

    /// Builds a new slab for pair `id`'s certified layer at time `t` and schedules its failure.
    pub(super) fn certify(
        &mut self,
        pairs: &mut PairTable,
        id: u32,
        state: &VertexState,
        t: f64,
        queue: &mut EventQueue,
    ) {
        let motion = pairs.kinematics(id, state, t);
        self.certify_at(pairs, id, &motion, &motion.closest(), t, queue);
    }

    /// [`Self::certify`] for a pair whose kinematics at `t` (`motion`) and closest points
    /// (`closest`) are already known.
    pub(super) fn certify_at(
        &mut self,
        pairs: &mut PairTable,
        id: u32,
        motion: &Motion,
        closest: &ClosestPoints,
        t: f64,
        queue: &mut EventQueue,
    ) {
        let i = id as usize;
        let eta = SLAB_MARGIN * self.schedule.eta(pairs.certified[i]);
        let slab = motion.slab(closest, eta);
        pairs.slab[i] = slab;
        pairs.slab_time[i] = t;
        // A pair too close to certify now is looked at again at once: the failure handler
        // activates the layer.
        let (dt, budget) = slab.map_or((0.0, no_budget()), |s| {
            motion.schedule(&s, self.quality_loss)
        });
        pairs.set_budget(i, budget);
        let cert = pairs.cert[i];
        match self.queued_time(t + dt) {
            Some(when) => queue.update(cert, when),
            None => {
                queue.remove(cert);
            }
        }
    }

    /// Whether a slab failing at `when` goes into the event queue (`Some(when)`) or stays out of
    /// it: it never fails, or it is parked because it fails after the next all-vertex event,
    /// which re-times every slab before it could be due (the parking area is the pair table).
    fn queued_time(&mut self, when: f64) -> Option<f64> {
        if !when.is_finite() {
            return None;
        }
        if when > self.park_after {
            self.stats.parked += 1;
            return None;
        }
        Some(when)
    }

    /// Pair `id`'s slab advanced to `t` and its next look under the velocities at `t`; `None`
    /// for a pair with no slab, or whose vertices all stayed within the slab's fuzzy-trajectory
    /// budget (its time stands). Pure, so that many pairs are re-timed in parallel.
    fn retime(
        &self,
        pairs: &PairTable,
        auditing: bool,
        id: u32,
        state: &VertexState,
        t: f64,
    ) -> Option<Retimed> {
        let i = id as usize;
        let mut slab = pairs.slab[i]?;
        if self.quality_loss.is_some() {
            let v = pairs.gather(id, |v| state.v[v]);
            if within_budget_at_shape(pairs.key[i], &slab, &v, &pairs.budget[i]) {
                return None;
            }
        }
        slab.point += (t - pairs.slab_time[i]) * slab.velocity;
        let motion = pairs.kinematics(id, state, t);
        let breach = auditing && !motion.holds(&slab, 0.0);
        let (dt, budget) = motion.schedule(&slab, self.quality_loss);
        Some(Retimed {
            point: slab.point,
            when: t + dt,
            budget,
            breach,
        })
    }

    /// Re-times the slabs of `ids` for the new velocities at `t`: failure times are computed in
    /// parallel for large batches, then applied to the queue as one batch in `ids` order.
    ///
    /// The new slabs are computed [`RESCHEDULE_CHUNK`] pairs at a time, so that the scratch
    /// holds one chunk's slabs, not one for every pair of a whole-mesh event.
    pub(super) fn reschedule(
        &mut self,
        pairs: &mut PairTable,
        audit: &mut Audit,
        ids: &[u32],
        state: &VertexState,
        t: f64,
        queue: &mut EventQueue,
    ) {
        self.stats.reschedules += ids.len() as u64;
        let mut retimed = std::mem::take(&mut self.retimed);
        let mut updates = std::mem::take(&mut self.updates);
        updates.clear();
        let auditing = audit.looking();
        for chunk in ids.chunks(RESCHEDULE_CHUNK) {
            let (this, table) = (&*self, &*pairs);
            let retime = |&id: &u32| this.retime(table, auditing, id, state, t);
            let zone = || zone!("retime_task");
            team::map_into(chunk, &mut retimed, RETIME_BLOCK, zone, retime);
            for (&id, r) in chunk.iter().zip(&retimed) {
                let Some(Retimed {
                    point,
                    when,
                    budget,
                    breach,
                }) = *r
                else {
                    continue;
                };
                self.stats.retimes += 1;
                let i = id as usize;
                if breach && audit.looking() {
                    let due = queue.time_of(pairs.cert[i]).is_some_and(|due| due <= t);
                    if !due {
                        audit.found(format!(
                            "the slab of pair {} (layer {}) no longer holds",
                            pairs.describe(id),
                            pairs.certified[i]
                        ));
                    }
                }
                if let Some(slab) = &mut pairs.slab[i] {
                    slab.point = point;
                }
                pairs.slab_time[i] = t;
                pairs.set_budget(i, budget);
                match self.queued_time(when) {
                    Some(when) => updates.push((pairs.cert[i], when)),
                    None => {
                        queue.remove(pairs.cert[i]);
                    }
                }
            }
        }
        queue.update_batch(&updates);
        self.retimed = retimed;
        self.updates = updates;
    }
}
