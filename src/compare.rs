//! `acm compare`: one scene, every method (ACM, the synchronous baseline, implicit contact
//! handling, and optimization-based animation when the scene has rigid bodies), the same
//! simulated time, one table.
//!
//! Each run hands its frames to an in-memory sink that audits them exactly
//! ([`crate::check::audit_positions`]) and measures energy and momentum
//! ([`crate::check::measure`]); nothing is written to disk.

use std::fmt::Write as _;

use crate::check::{audit_positions, measure, AuditReport, Conservation};
use crate::scene::{FailSafe, Method, Scene};
use crate::{driver, Frame, FrameSink, RunError};

/// Pairs closer than this (cm) count towards the minimum distance.
const DISTANCE_CUTOFF: f64 = 1.0;

/// One integrator's line of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareRow {
    /// `acm`, `sync` with its fail-safe, or `implicit`.
    pub integrator: String,
    /// Wall-clock seconds of the run (building excluded).
    pub wall_seconds: f64,
    /// Simulated time reached (s).
    pub simulated_seconds: f64,
    /// Frames audited.
    pub frames: u64,
    /// Intersecting triangle pairs found by the exact audit, summed over frames.
    pub intersecting_pairs: u64,
    /// Smallest distance between non-adjacent triangles over all frames (cm; infinite when
    /// none came within 1 cm).
    pub min_distance: f64,
    /// Total energy at the last frame minus at the first (erg).
    pub energy_drift: f64,
    /// `energy_drift` relative to the energy scale `max(|E_0|, largest kinetic energy)`.
    pub energy_drift_relative: f64,
    /// `|P_end - P_0 - M g T|` (g cm/s): the momentum change not explained by gravity (contact
    /// with fixed or scripted objects and prescribed forces also change it).
    pub momentum_drift: f64,
    /// `momentum_drift / (M |g| T)`, or 0 without gravity.
    pub momentum_drift_relative: f64,
    /// `None` if the run reached the end; otherwise why it stopped.
    pub stopped: Option<String>,
    /// The method's summary of its run ([`crate::Stepper::summary`]): events, or steps and how
    /// much the fail-safe had to do.
    pub notes: Option<String>,
}

/// Runs `scene` with every method (`Method::ALL`, and [`Method::Oba`] when it has rigid
/// bodies) up to `until` and returns one row for each, with the method's summary of its run
/// as the row's notes. A scene one method cannot build (for example, primitives closer than
/// ACM's `eta1`) gives a row that says so.
pub fn compare(scene: &Scene, until: f64) -> Vec<CompareRow> {
    let rigid = (!scene.rigid.bodies.is_empty()).then_some(Method::Oba);
    Method::ALL
        .into_iter()
        .chain(rigid)
        .map(|method| {
            let name = match method {
                Method::Sync => match scene.sync.failsafe {
                    FailSafe::ImpactZones => "sync (impact zones)".into(),
                    FailSafe::InelasticProjection => "sync (inelastic projection)".into(),
                },
                other => other.name().to_string(),
            };
            let mut run_scene = scene.clone();
            run_scene.integrator.method = method;
            let mut sink = Measure::default();
            match driver(run_scene) {
                Ok(mut stepper) => {
                    let result = stepper.run_until(until, &mut sink);
                    let s = stepper.run_stats();
                    let mut row = sink.row(
                        name,
                        s.wall_seconds,
                        s.simulated_seconds,
                        scene,
                        result.err().map(|e| e.to_string()),
                    );
                    row.notes = Some(stepper.summary());
                    row
                }
                Err(e) => Measure::default().row(name, 0.0, 0.0, scene, Some(e.to_string())),
            }
        })
        .collect()
}

/// The rows as an aligned text table, then the notes and one line per run that stopped early.
pub fn table(rows: &[CompareRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<28} {:>10} {:>9} {:>7} {:>12} {:>12} {:>13} {:>9} {:>13} {:>9}",
        "integrator",
        "wall (s)",
        "sim (s)",
        "frames",
        "intersect.",
        "min dist",
        "energy drift",
        "(rel.)",
        "mom. drift",
        "(rel.)"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<28} {:>10.3} {:>9.4} {:>7} {:>12} {:>12.3e} {:>13.4e} {:>9.2e} {:>13.4e} {:>9.2e}",
            r.integrator,
            r.wall_seconds,
            r.simulated_seconds,
            r.frames,
            r.intersecting_pairs,
            r.min_distance,
            r.energy_drift,
            r.energy_drift_relative,
            r.momentum_drift,
            r.momentum_drift_relative
        );
    }
    for r in rows {
        if let Some(notes) = &r.notes {
            let _ = writeln!(out, "{}: {notes}", r.integrator);
        }
        if let Some(why) = &r.stopped {
            let _ = writeln!(out, "{} stopped early: {why}", r.integrator);
        }
    }
    out
}

/// A sink that audits and measures every frame.
#[derive(Debug)]
struct Measure {
    report: AuditReport,
    first: Option<Conservation>,
    last: Option<Conservation>,
    largest_kinetic: f64,
    free_mass: f64,
    audit_error: Option<String>,
}

impl Default for Measure {
    fn default() -> Self {
        Self {
            report: AuditReport::new(),
            first: None,
            last: None,
            largest_kinetic: 0.0,
            free_mass: 0.0,
            audit_error: None,
        }
    }
}

impl FrameSink for Measure {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        let model = frame.model();
        if let Err(e) = audit_positions(
            frame.positions,
            model.triangles(),
            DISTANCE_CUTOFF,
            frame.index,
            &mut self.report,
        ) {
            self.audit_error.get_or_insert(e.to_string());
        }
        let c = measure(frame.source, frame.time, frame.positions);
        if self.first.is_none() {
            self.free_mass = frame.source.free_mass();
            self.first = Some(c);
        }
        self.largest_kinetic = self.largest_kinetic.max(c.kinetic);
        self.last = Some(c);
        Ok(())
    }
}

impl Measure {
    fn row(
        self,
        integrator: String,
        wall_seconds: f64,
        simulated_seconds: f64,
        scene: &Scene,
        stopped: Option<String>,
    ) -> CompareRow {
        let (first, last) = match (self.first, self.last) {
            (Some(a), Some(b)) => (a, b),
            _ => (Conservation::default(), Conservation::default()),
        };
        let energy_drift = last.total - first.total;
        let energy_scale = first.total.abs().max(self.largest_kinetic);
        let elapsed = last.time - first.time;
        let gravity_momentum = self.free_mass * scene.gravity * elapsed;
        let momentum_drift = (last.momentum - first.momentum - gravity_momentum).length();
        let momentum_scale = gravity_momentum.length();
        let stopped = match (stopped, self.audit_error) {
            (Some(a), Some(b)) => Some(format!("{a}; audit: {b}")),
            (a, b) => a.or(b),
        };
        CompareRow {
            integrator,
            wall_seconds,
            simulated_seconds,
            frames: self.report.frames,
            intersecting_pairs: self.report.intersecting_pairs,
            min_distance: self.report.min_distance,
            energy_drift,
            energy_drift_relative: ratio(energy_drift, energy_scale),
            momentum_drift,
            momentum_drift_relative: ratio(momentum_drift, momentum_scale),
            stopped,
            notes: None,
        }
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}
