//! acm: Asynchronous Contact Mechanics.
#![deny(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod events;
pub mod forces;
pub mod ids;
pub mod mesh;
pub mod state;
