//! What an OBA run did, written as `stats.json`: the thesis's per-frame statistics (Tables
//! 7.1-7.2: close pairs, collisions, contacts, QPs, rollbacks, seconds per frame), totals, and
//! a record per step (Fig. 7.1).

use serde::Serialize;

use crate::RunStats;

/// One step's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct StepRecord {
    /// End of the step (s).
    pub time: f64,
    /// Close pairs of parts in the position update.
    pub close_pairs: u32,
    /// Contacts approaching at the momentum update.
    pub collisions: u32,
    /// Contact points.
    pub contacts: u32,
    /// Virtual contact points of bounce at a distance (§6.7.1), besides `contacts`.
    pub virtual_contacts: u32,
    /// QPs solved (position, momentum and static contact).
    pub qps: u32,
    /// QPs of the position update.
    pub position_qps: u32,
    /// Rollbacks after infeasible position QPs.
    pub rollbacks: u32,
    /// Position-update iterations.
    pub iterations: u32,
    /// The position update took an earlier clean configuration.
    pub fallback: bool,
    /// Impulse groups solved again with restitution 0.
    pub restitution_fallbacks: u32,
    /// Impulse groups given the frictionless projection of their velocities.
    pub projections: u32,
    /// Impulse groups left without impulses.
    pub skipped_groups: u32,
    /// Collisions resolved one at a time.
    pub sequential: u32,
    /// Frozen bodies after the step.
    pub frozen: u32,
    /// Smallest separation of a close pair after the position update (cm).
    pub min_separation: f64,
    /// Wall seconds of the step.
    pub seconds: f64,
}

/// Averages per frame, as in the thesis's tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PerFrame {
    /// Close pairs per frame.
    pub close_pairs: f64,
    /// Collisions per frame.
    pub collisions: f64,
    /// Contacts per frame.
    pub contacts: f64,
    /// QPs per frame (all three stages).
    pub qps: f64,
    /// QPs of the position update per frame (the thesis's "avg. #qp/fr.").
    pub position_qps: f64,
    /// Rollbacks per position QP, in percent.
    pub rollbacks_percent: f64,
    /// Wall seconds per frame.
    pub seconds: f64,
}

/// Statistics of an OBA run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ObaStats {
    /// `"oba"`.
    pub integrator: &'static str,
    /// The step (s).
    pub step: f64,
    /// Time between frames (s).
    pub frame_interval: f64,
    /// Steps taken.
    pub steps: u64,
    /// Bodies.
    pub bodies: usize,
    /// Averages per frame.
    pub per_frame: PerFrame,
    /// Sums over the steps.
    pub totals: StepRecord,
    /// Steps whose position update fell back to an earlier clean configuration.
    pub position_fallbacks: u64,
    /// Smallest separation of a close pair after any position update (cm).
    pub min_separation: f64,
    /// Wall seconds in the position update, the momentum update and the static contact
    /// update (with freezing).
    pub stage_seconds: [f64; 3],
    /// Every step.
    pub steps_log: Vec<StepRecord>,
    /// The common statistics (model size, wall and simulated time, frames, threads).
    #[serde(flatten)]
    pub run: RunStats,
}

impl ObaStats {
    /// Empty statistics of a run with step `step`, frames every `frame_interval` and `bodies`
    /// bodies.
    pub(crate) fn new(step: f64, frame_interval: f64, bodies: usize, run: RunStats) -> Self {
        Self {
            integrator: "oba",
            step,
            frame_interval,
            bodies,
            min_separation: f64::INFINITY,
            run,
            ..Self::default()
        }
    }

    /// Adds a step and the wall seconds of its three stages.
    pub(crate) fn record(&mut self, r: &StepRecord, stages: [f64; 3]) {
        let t = &mut self.totals;
        t.time = r.time;
        t.close_pairs += r.close_pairs;
        t.collisions += r.collisions;
        t.contacts += r.contacts;
        t.virtual_contacts += r.virtual_contacts;
        t.qps += r.qps;
        t.position_qps += r.position_qps;
        t.rollbacks += r.rollbacks;
        t.iterations += r.iterations;
        t.restitution_fallbacks += r.restitution_fallbacks;
        t.projections += r.projections;
        t.skipped_groups += r.skipped_groups;
        t.sequential += r.sequential;
        t.frozen = r.frozen;
        t.seconds += r.seconds;
        t.min_separation = self.min_separation.min(r.min_separation);
        self.min_separation = t.min_separation;
        self.position_fallbacks += u64::from(r.fallback);
        for (total, s) in self.stage_seconds.iter_mut().zip(stages) {
            *total += s;
        }
        self.steps_log.push(*r);
    }

    /// Computes the per-frame averages from the totals.
    pub(crate) fn finish(&mut self) {
        let frames = (self.steps_log.len() as f64 * self.step / self.frame_interval).max(1.0);
        let t = &self.totals;
        let per = |x: u32| f64::from(x) / frames;
        self.per_frame = PerFrame {
            close_pairs: per(t.close_pairs),
            collisions: per(t.collisions),
            contacts: per(t.contacts),
            qps: per(t.qps),
            position_qps: per(t.position_qps),
            rollbacks_percent: 100.0 * f64::from(t.rollbacks) / f64::from(t.position_qps.max(1)),
            seconds: t.seconds / frames,
        };
    }
}
