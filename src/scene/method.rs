//! Which method integrates a scene: ACM, or one of the baselines it is compared with.

/// Which integrator runs the scene.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Method {
    /// Asynchronous contact mechanics: the event loop of [`crate::Simulation`].
    #[default]
    Acm,
    /// The synchronous velocity-filter baseline of [`crate::sync`].
    Sync,
    /// Implicit contact handling (Otaduy et al. 2009) of [`crate::implicit`].
    Implicit,
    /// Optimization-based animation of rigid bodies (Schmidl 2002) of [`crate::rigid`].
    Oba,
}

impl Method {
    /// Every method, in the order `acm compare` runs them.
    pub(crate) const ALL: [Self; 3] = [Self::Acm, Self::Sync, Self::Implicit];

    /// The name profiles use (`integrator.method`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Acm => "acm",
            Self::Sync => "sync",
            Self::Implicit => "implicit",
            Self::Oba => "oba",
        }
    }
}
