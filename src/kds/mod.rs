//! Kinetic data structures (thesis §5.3, DESIGN §6).
//!
//! - [`slab`]: kinetic separation slabs, the narrow-phase certificate of a VT or EE pair.
//! - [`swept_boxes`]: the interim broad phase (swept boxes on a hash grid), to be replaced by
//!   the kinetic k-DOP separation list.

pub mod slab;
pub mod swept_boxes;
