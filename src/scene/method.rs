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
}
