//! bending
