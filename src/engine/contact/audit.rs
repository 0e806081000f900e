//! The audit of `--audit`: whether it is on, the first breach found, and the full check of
//! every certificate, layer and broad-phase box at one time.

use super::pair_table::PairTable;
use crate::events::EventQueue;
use crate::kds::BroadPhase;
use crate::penalty::layers::LayerSchedule;
use crate::state::VertexState;

/// The interval audit's switch and its first breach, waiting for the loop to report it.
#[derive(Debug, Default)]
pub(super) struct Audit {
    /// Whether certificates and boxes are checked whenever their trajectories change.
    pub(super) on: bool,
    breach: Option<String>,
}

impl Audit {
    /// Whether a breach should be looked for now: the audit is on and none is waiting.
    pub(super) fn looking(&self) -> bool {
        self.on && self.breach.is_none()
    }

    /// Records `breach` unless an earlier one is waiting.
    pub(super) fn found(&mut self, breach: String) {
        self.breach.get_or_insert(breach);
    }

    /// The first breach found since the last call.
    pub(super) fn take(&mut self) -> Option<String> {
        self.breach.take()
    }

    /// Every vertex is still inside its broad-phase box (checked before the boxes of kicked
    /// vertices are swept again).
    pub(super) fn boxes(&mut self, boxes: &BroadPhase, state: &VertexState, t: f64) {
        if self.looking() {
            if let Err(e) = boxes.audit(state, t) {
                self.found(e);
            }
        }
    }
}

/// The full audit at time `t`: every live slab not yet due holds, every candidate pair closer
/// than `eta(l)` has layers `1..=l` active, and every vertex is inside its swept box.
///
/// `--audit` runs it when a run ends, and between ends checks each certificate and box
/// whenever the trajectories it covers are about to change (a kick re-times it, a window
/// rebuilds it). Slab and box conditions are affine in time along linear trajectories, so a
/// condition that holds when it is made and again just before its trajectory changes holds at
/// every event in between: this is the audit after every event, without its cost.
pub(super) fn full(
    pairs: &PairTable,
    schedule: &LayerSchedule,
    boxes: &BroadPhase,
    state: &VertexState,
    t: f64,
    queue: &EventQueue,
) -> Result<(), String> {
    for id in 0..pairs.slots() {
        let i = id as usize;
        if !pairs.live[i] {
            continue;
        }
        let due = queue.time_of(pairs.cert[i]).is_some_and(|due| due <= t);
        if let (Some(slab), false) = (&pairs.slab[i], due) {
            let t0 = pairs.slab_time[i];
            if !pairs.kinematics(id, state, t0).holds(slab, t - t0) {
                return Err(format!(
                    "the slab of pair {} (layer {}) no longer holds",
                    pairs.describe(id),
                    pairs.certified[i]
                ));
            }
        }
        let d = pairs.kinematics(id, state, t).distance();
        let active = pairs.active[i];
        let needed = schedule.layers_containing(d).unwrap_or(0);
        if needed > active {
            return Err(format!(
                "pair {} is {d:e} apart, inside layer {needed}, but only layers 1..={active} are \
                 active",
                pairs.describe(id)
            ));
        }
    }
    boxes.audit(state, t)
}
