//! ACM's driver ([`Simulation`]): the model advanced by a stream of events (thesis Alg. 5 and 7):
//! pop the earliest event, apply it, reschedule.
//!
//! Every force has a fixed clock and fires at `n * h` for `n = 0, 1, 2, ...` (computed from the
//! tick count, never accumulated, so clocks do not drift). Ties are broken by event id, so a run
//! is a pure function of its input. Snapshots read positions at their time without writing.

mod build;
mod contact;
mod contingency;
pub(crate) mod event_loop;
mod kicked;
mod layer_events;
mod processed;
mod simulation;
mod speculative;
mod stats;
mod triangle_pairs;
pub(crate) mod watchdog;

pub use crate::team::WaitPolicy;
pub use contact::ContactStats;
pub use processed::Processed;
pub use simulation::Simulation;
pub use stats::{EventCounts, Stats};
