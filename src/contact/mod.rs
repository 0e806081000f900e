//! Contact: discrete penalty layers (thesis ch. 4, DESIGN §5).
//!
//! Pure, allocation-free kernels that run per event:
//! - [`closest`]: closest points for vertex-triangle and edge-edge pairs;
//! - [`layers`]: the layer schedule `eta(l)`, `r(l)`, clocks and energies;
//! - [`penalty`]: the impulses of one penalty-layer tick for one pair (restitution, friction);
//! - [`keys`]: the identity of a candidate pair ([`PairKey`], [`ContactKey`]).

pub mod closest;
pub mod keys;
pub mod layers;
pub mod penalty;

pub use keys::{ContactKey, PairKey};
