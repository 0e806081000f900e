//! spring
