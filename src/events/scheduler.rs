//! [`Scheduler`]: the event table and the queue, borrowed together.

use super::{EventQueue, EventTable};

/// What a subsystem needs to make, time and drop its events: the table that says what each
/// event is and the queue that orders them. Borrowed together, so that one handle is passed
/// where both are needed.
#[derive(Debug)]
pub(crate) struct Scheduler<'a> {
    /// What each event is.
    pub table: &'a mut EventTable,
    /// When each queued event is due.
    pub queue: &'a mut EventQueue,
}
