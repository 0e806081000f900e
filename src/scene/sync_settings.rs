//! Settings of the synchronous baseline (thesis ch. 3): the parameters of the velocity filter.

/// The last stage of the velocity filter: what resolves the collisions that the iterated impulses
/// leave (thesis Alg. 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FailSafe {
    /// Rigid impact zones (Provot 1997; Bridson et al. 2002; thesis Alg. 2).
    #[default]
    ImpactZones,
    /// Inelastic projection (thesis §3.6) with the friction of §3.7.
    InelasticProjection,
}

/// What the synchronous integrator does with a step whose collisions the fail-safe could not
/// resolve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OnUnresolved {
    /// Stop the run with an error before the step is taken (no intersecting frame is written).
    #[default]
    Stop,
    /// Take the step anyway and count it in the statistics (frames may then intersect; the audit
    /// shows it).
    Continue,
}

/// Parameters of the synchronous velocity filter (Bridson, Fedkiw and Anderson 2002, with the
/// fail-safes of thesis ch. 3). Lengths in cm, times in s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SyncSettings {
    /// Largest step `h`; the step used is the largest that divides the frame interval and is at
    /// most this. `None`: the smallest stable elastic clock (what ACM's super-elements use).
    pub step: Option<f64>,
    /// Proximity thickness: pairs closer than this at the start of a step get repulsion
    /// impulses. `None`: `contact.eta1`.
    pub thickness: Option<f64>,
    /// Repulsion spring stiffness `k` (dyn/cm) of the impulse `k d h`. `None`: `contact.r1`.
    pub stiffness: Option<f64>,
    /// Coulomb friction coefficient of repulsions and of the inelastic projection. `None`:
    /// `contact.friction`.
    pub friction: Option<f64>,
    /// Passes of iterated CCD impulses before the fail-safe takes over.
    pub max_ccd_iterations: u32,
    /// Rounds of the fail-safe loop (Alg. 3) before a step is declared unresolved.
    pub max_failsafe_iterations: u32,
    /// The fail-safe.
    pub failsafe: FailSafe,
    /// What to do with an unresolved step.
    pub on_unresolved: OnUnresolved,
}

impl Default for SyncSettings {
    fn default() -> Self {
        Self {
            step: None,
            thickness: None,
            stiffness: None,
            friction: None,
            max_ccd_iterations: 10,
            max_failsafe_iterations: 100,
            failsafe: FailSafe::default(),
            on_unresolved: OnUnresolved::default(),
        }
    }
}
