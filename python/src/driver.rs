//! The method behind an `acm.Simulation`: ACM's event loop, which can also step one event at a
//! time and be steered, rigid bodies by optimization-based animation, whose bodies can be read
//! back, or either fixed-step method (the velocity filter, implicit contact).

use acm::implicit::ImplicitSimulation;
use acm::rigid::ObaSimulation;
use acm::scene::{Method, Scene, SceneError};
use acm::sync::SyncSimulation;
use acm::{FrameSource, Stepper};
use pyo3::PyResult;

use crate::InputError;

/// A scene's method, built.
#[derive(Debug)]
pub(crate) enum Driver {
    /// ACM's event loop.
    Acm(Box<acm::Simulation>),
    /// Optimization-based animation of rigid bodies.
    Oba(Box<ObaSimulation>),
    /// A fixed-step method: the velocity filter or implicit contact.
    Fixed(Box<dyn Stepper + Sync>),
}

impl Driver {
    /// Builds the driver of `scene`'s method (`integrator.method`).
    pub(crate) fn new(scene: &Scene) -> Result<Self, SceneError> {
        Ok(match scene.integrator.method {
            Method::Acm => Self::Acm(Box::new(acm::Simulation::new(scene)?)),
            Method::Oba => Self::Oba(Box::new(ObaSimulation::new(scene)?)),
            Method::Sync => Self::Fixed(Box::new(SyncSimulation::new(scene)?)),
            Method::Implicit => Self::Fixed(Box::new(ImplicitSimulation::new(scene)?)),
        })
    }

    /// The driver as a stepper: what every method does.
    pub(crate) fn stepper(&mut self) -> &mut dyn Stepper {
        match self {
            Self::Acm(sim) => sim.as_mut(),
            Self::Oba(sim) => sim.as_mut(),
            Self::Fixed(sim) => sim.as_mut(),
        }
    }

    /// The driver as the source of frames: its model, time and run statistics.
    pub(crate) fn source(&self) -> &dyn FrameSource {
        match self {
            Self::Acm(sim) => sim.as_ref(),
            Self::Oba(sim) => sim.as_ref(),
            Self::Fixed(sim) => sim.as_ref(),
        }
    }

    /// ACM's event loop, for what only it does (`what`: the method asked for); other methods
    /// get an `acm.InputError` that says so.
    pub(crate) fn acm(&mut self, what: &str) -> PyResult<&mut acm::Simulation> {
        match self {
            Self::Acm(sim) => Ok(sim.as_mut()),
            _ => Err(InputError::new_err(format!(
                "{}: {what} needs ACM's event loop; integrator = {} advances in fixed steps \
                 (use run_until)",
                self.source().model().name(),
                self.method_name()
            ))),
        }
    }

    /// What the run did so far, as `stats.json` holds it.
    pub(crate) fn stats_json(&self) -> serde_json::Value {
        match self {
            Self::Acm(sim) => sim.stats_json(),
            Self::Oba(sim) => sim.stats_json(),
            Self::Fixed(sim) => sim.stats_json(),
        }
    }

    /// The name of the method, as a profile's `integrator.method` writes it.
    pub(crate) fn method_name(&self) -> &'static str {
        match self {
            Self::Acm(_) => Method::Acm,
            Self::Oba(_) => Method::Oba,
            Self::Fixed(sim) => sim.method(),
        }
        .name()
    }
}
