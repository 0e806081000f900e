//! Forces as asynchronous variational integrator (AVI) force events (thesis §5.2, DESIGN §4).
//!
//! A force with clock `h` applies, at each of its ticks `n * h`, the impulse `-h * dV/dx` to the
//! vertices of its stencil. Elastic forces live in *element families* (all edge springs, all
//! bending hinges): structure-of-arrays tables ticked either one element per event (classic AVI)
//! or a whole family per event (a *super-element*, §8.2). External forces (gravity, prescribed
//! forces on vertex sets) are linear potentials: any clock is stable.
//!
//! The pure per-element kernels are in [`spring`] and [`bending`]; [`ElementFamily`] runs them
//! over a table; `external` holds the linear forces.

pub mod bending;
mod element_family;
pub(crate) mod external;
mod hinges;
mod materials;
pub mod spring;
mod springs;

pub(crate) use element_family::{bin_clock, clock_bin};
pub use element_family::{ElementFamily, ElementKernel};
pub(crate) use hinges::{HingeFamily, HingeKernel};
pub(crate) use springs::{SpringFamily, SpringKernel};
