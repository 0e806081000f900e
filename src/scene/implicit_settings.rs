//! Settings of the implicit integrator (Otaduy, Tamstorf, Steinemann and Gross 2009): linearized
//! backward Euler with position-level contact constraints, constraint manifold refinement and
//! the nested-relaxation contact solver.

/// Parameters of [`crate::implicit`]. Lengths in cm, times in s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImplicitSettings {
    /// Largest step `h`; the step used is the largest that divides the frame interval and is at
    /// most this. `None`: 0.01 s (the method is unconditionally stable; the paper's large
    /// steps).
    pub step: Option<f64>,
    /// Safety distance `delta`: pairs closer than this at the start of a step become
    /// constraints, and constraints ask for this separation at its end. `None`: `contact.eta1`.
    pub delta: Option<f64>,
    /// Coefficient of the four-sided friction pyramid. `None`: `contact.friction`.
    pub friction: Option<f64>,
    /// Constraint manifold refinement: solves (each followed by continuous collision
    /// detection) before the step is halved.
    pub max_cmr_iterations: u32,
    /// How many times a step may be halved before the fail-safe (rigid impact zones) runs.
    pub max_halvings: u32,
    /// Outer iterations of the contact solver (one block Gauss-Seidel sweep each).
    pub max_ica_iterations: u32,
    /// Projected Gauss-Seidel sweeps of the inner problem per outer iteration.
    pub max_pgs_sweeps: u32,
    /// Relative change of the residuals below which the contact solver's loops stop (the
    /// paper's 5%).
    pub ica_tolerance: f64,
    /// Relative residual at which the conjugate-gradient solve of the unconstrained step stops.
    pub cg_tolerance: f64,
}

impl Default for ImplicitSettings {
    fn default() -> Self {
        Self {
            step: None,
            delta: None,
            friction: None,
            max_cmr_iterations: 5,
            max_halvings: 2,
            max_ica_iterations: 200,
            max_pgs_sweeps: 50,
            ica_tolerance: 0.05,
            cg_tolerance: 1e-8,
        }
    }
}
