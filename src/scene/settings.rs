//! The integrator's and contact's settings of a scene.

use super::error::SceneError;
use super::method::Method;

/// Integrator settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntegratorSettings {
    /// Safety factor `c` in `(0, 1]` applied to every stable clock.
    pub safety: f64,
    /// One clock for every force event, overriding the stable clocks (for tests and comparisons
    /// with synchronous integrators). The user is responsible for its stability.
    pub clock: Option<f64>,
    /// Which integrator runs the scene: ACM's event loop or the synchronous baseline.
    pub method: Method,
}

impl Default for IntegratorSettings {
    fn default() -> Self {
        Self {
            method: Method::Acm,
            safety: 0.5,
            clock: None,
        }
    }
}

/// Contact parameters (discrete penalty layers, thesis ch. 4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactSettings {
    /// Whether contact is simulated.
    pub enabled: bool,
    /// Thickness of the first penalty layer, `eta(1)` (cm).
    pub eta1: f64,
    /// Stiffness of the first penalty layer, `r(1)`.
    pub r1: f64,
    /// Coefficient of restitution in `[0, 1]`.
    pub cor: f64,
    /// Friction coefficient `mu >= 0`.
    pub friction: f64,
    /// Cap friction so it never reverses the relative sliding velocity (off in the thesis).
    pub friction_cap: bool,
    /// Layer thickness law `eta(l) = eta1 * l^(-eta_exponent)` (thesis: 1/4).
    pub eta_exponent: f64,
    /// Layer stiffness law `r(l) = r1 * l^r_exponent` (thesis: 3).
    pub r_exponent: f64,
    /// Safety factor of the layer clocks `h(l) = safety * sqrt(m_min / r(l))`, in `(0, 1]`.
    /// The layer ticks' energy error per impact grows with it (about 0.2% at 0.05, 5-50% at
    /// 0.5); [`Self::work_closure`] takes it out for elastic contact.
    pub safety: f64,
    /// How the layer clocks follow the layer stiffnesses (default: the thesis rule).
    pub clocks: crate::penalty::layers::LayerClocks,
    /// With `cor = 1`, whenever a pair is found outside its outermost layer at a layer tick,
    /// give it the normal impulse that takes out the net work its layer ticks did since it was
    /// last outside (the layers' potential, zero there, did none); see the README's known
    /// limitations. Off: the thesis's ticks alone.
    pub work_closure: bool,
    /// With [`Self::work_closure`]: also take out the error each layer impulse makes in the
    /// ticks of the other forces on its vertices (springs, hinges, gravity), which a kick
    /// between two of a force's ticks puts out of step with the force's potential.
    pub closure_forces: bool,
    /// With [`Self::work_closure`] and `cor = 1`: when two objects part, take out of their
    /// motion the work their pairs' closing impulses could not take out of the pairs' own
    /// (an impulse equal and opposite on the two, spread over each as on a rigid body).
    pub closure_objects: bool,
    /// With [`Self::work_closure`] and `0 < cor < 1`: close partly elastic contact too,
    /// against the work of the exact biphasic layers along the distances at the pair's ticks.
    pub closure_restitution: bool,
    /// The broad phase finding candidate pairs (default: the kinetic 18-DOP separation list).
    pub broad_phase: crate::kds::BroadPhaseKind,
    /// When penalty layers are found to be needed: by kinetic certificates ahead of time, or
    /// by speculative windows checked afterwards (default: the certificates).
    pub scheduler: ContactScheduler,
}

/// How the contact subsystem finds the layers a pair needs (`contact.scheduler`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ContactScheduler {
    /// Kinetic data structures (thesis §5.3): a separation slab per candidate pair, re-timed
    /// after every kick, switches a layer on when it fails.
    #[default]
    Kds,
    /// Speculative windows (Ainsley et al. 2012): every force and active layer runs through a
    /// window without certificates, the recorded trajectories are checked afterwards for pairs
    /// that came within a layer's activation distance, and the window is run again with those
    /// layers on until it is clean.
    Speculative,
}

impl ContactSettings {
    /// The layer schedule, or why it is not a barrier.
    pub fn schedule(&self) -> Result<crate::penalty::layers::LayerSchedule, SceneError> {
        use crate::penalty::layers::{LayerLaw, LayerSchedule};
        let law = if self.eta_exponent == 0.25 && self.r_exponent == 3.0 {
            LayerLaw::Thesis
        } else {
            LayerLaw::Power {
                eta_exponent: self.eta_exponent,
                r_exponent: self.r_exponent,
            }
        };
        LayerSchedule::new(self.eta1, self.r1, law).map_err(|e| {
            let path = match e.field {
                "contact.layer_law" => "contact.r_exponent",
                other => other,
            };
            SceneError::new(path, e.reason)
        })
    }
}

impl Default for ContactSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            eta1: 0.1,
            r1: 1000.0,
            cor: 0.0,
            friction: 0.0,
            friction_cap: false,
            eta_exponent: 0.25,
            r_exponent: 3.0,
            safety: 0.5,
            clocks: crate::penalty::layers::LayerClocks::Thesis,
            work_closure: true,
            closure_forces: true,
            closure_objects: true,
            closure_restitution: false,
            broad_phase: crate::kds::BroadPhaseKind::Kdop18,
            scheduler: ContactScheduler::Kds,
        }
    }
}
