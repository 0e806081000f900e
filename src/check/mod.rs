//! Correctness tools that only read a simulation: conservation accounting.

mod conservation;

pub use conservation::{measure, Conservation};
