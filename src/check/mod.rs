//! Correctness tools that only read: the exact intersection audit and conservation accounting.
//!
//! * `intersection`: exact closed triangle-triangle intersection test.
//! * `distance`: floating-point triangle-triangle distance, independent of the contact code.
//! * `audit`: whole-configuration audit (exact broad phase + exact test + minimum distance),
//!   behind `acm check`.
//! * [`measure`]: energies and momenta, behind `energy.csv`.

pub(crate) mod audit;
mod conservation;
pub(crate) mod distance;
pub(crate) mod intersection;

pub use audit::{audit_frame, audit_positions, AuditError, AuditReport, BadPair};
pub use conservation::{measure, Conservation};
