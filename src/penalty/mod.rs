//! Penalty layers (thesis ch. 4, DESIGN §5): the kernels of contact.
//!
//! Pure, allocation-free kernels that run per event:
//! - `closest`: closest points for vertex-triangle and edge-edge pairs;
//! - [`layers`]: the layer schedule `eta(l)`, `r(l)`, clocks and energies;
//! - `impulse`: the impulses of one penalty-layer tick for one pair (restitution, friction);
//! - `keys`: the identity of a candidate pair (`PairKey`, `ContactKey`).

pub(crate) mod closest;
pub(crate) mod impulse;
pub(crate) mod keys;
pub mod layers;

pub(crate) use keys::{ContactKey, PairKey};
