//! forces
pub mod spring;
pub mod bending;
