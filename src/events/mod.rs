//! Events: the table of what each event is, and the queue that orders them in time.
//!
//! An event is a slot in the [`EventTable`] (its [`EventKind`] and a payload index into the
//! owning subsystem's table), referred to by an [`EventHandle`] whose generation detects reuse.
//! Pending events sit in the `EventQueue`, an indexed D-ary min-heap over event ids keyed by
//! `(time, id)`, so that ties between simultaneous events break deterministically.

mod id;
mod queue;
mod scheduler;
mod table;

pub(crate) use id::EventId;
pub(crate) use queue::{EventQueue, SparseSlots};
pub(crate) use scheduler::Scheduler;
pub use table::{EventHandle, EventKind, EventTable, StaleHandle};
