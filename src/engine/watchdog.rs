//! The guarantee's watchdog: a run whose simulated time stops moving is stopped.
//!
//! Every event the loop pops moves time forward or leaves it where it is. A legitimate instant
//! fires each event a bounded number of times (a slab that fails, switches its layer on and is
//! certified again for the next layer, a few layers deep at most), so an instant that fires many
//! times more events than the event table holds is a certificate that keeps failing without
//! time moving: the run would spin forever, and stops instead
//! ([`crate::RunError::Stalled`]).

/// Events one instant may fire for each event of the table before the run counts as stalled.
const EVENTS_PER_TABLE_EVENT: u64 = 64;

/// Events one instant may always fire, however small the table.
const FLOOR: u64 = 1_000_000;

/// Counts the events fired at the current instant (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(super) struct Watchdog {
    /// The instant being counted.
    instant: f64,
    /// Events fired at it so far.
    fired: u64,
    /// Events an instant may always fire.
    floor: u64,
    /// Events an instant may fire for each event of the table.
    per_table_event: u64,
}

impl Default for Watchdog {
    fn default() -> Self {
        Self::with_limits(FLOOR, EVENTS_PER_TABLE_EVENT)
    }
}

impl Watchdog {
    /// A watchdog that lets an instant fire `floor` events, or `per_table_event` for each
    /// event of the table if that is more.
    pub(super) fn with_limits(floor: u64, per_table_event: u64) -> Self {
        Self {
            instant: f64::NEG_INFINITY,
            fired: 0,
            floor,
            per_table_event,
        }
    }

    /// Counts an event fired at `t` with `table_len` events in the table: `Err(n)` once the
    /// instant `t` has fired `n` events, more than it may.
    pub(super) fn fire(&mut self, t: f64, table_len: usize) -> Result<(), u64> {
        if t != self.instant {
            self.instant = t;
            self.fired = 0;
        }
        self.fired += 1;
        let limit = self
            .floor
            .max(self.per_table_event.saturating_mul(table_len as u64));
        if self.fired > limit {
            Err(self.fired)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instant_may_fire_many_events_per_table_event_but_no_more() {
        let mut dog = Watchdog::with_limits(10, EVENTS_PER_TABLE_EVENT);
        for _ in 0..10 {
            dog.fire(1.0, 0).unwrap();
        }
        assert_eq!(dog.fire(1.0, 0), Err(11));
        // With a larger table, the instant may fire 64 events for each.
        let mut dog = Watchdog::with_limits(10, EVENTS_PER_TABLE_EVENT);
        for _ in 0..640 {
            dog.fire(2.0, 10).unwrap();
        }
        assert_eq!(dog.fire(2.0, 10), Err(641));
    }

    #[test]
    fn time_moving_on_starts_a_new_count() {
        let mut dog = Watchdog::with_limits(3, 0);
        for k in 0..100 {
            for _ in 0..3 {
                dog.fire(f64::from(k), 0).unwrap();
            }
        }
    }
}
