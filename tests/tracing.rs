//! The `tracing` feature: every profiling zone is a `tracing` span, seen by the program's own
//! subscriber (`cargo test --release --features tracing --test tracing`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use acm::prelude::Stepper;
use acm::{scene::profile, NoFrames, Simulation};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A subscriber that counts the spans opened, by name.
#[derive(Default)]
struct SpanCounts {
    counts: Mutex<BTreeMap<&'static str, u64>>,
    next: AtomicU64,
}

/// The subscriber installed; the test keeps another handle to the counts.
struct Counter(Arc<SpanCounts>);

impl Subscriber for Counter {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        *self
            .0
            .counts
            .lock()
            .unwrap()
            .entry(span.metadata().name())
            .or_default() += 1;
        Id::from_u64(self.0.next.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn every_zone_is_a_span_of_the_programs_subscriber() {
    let spans = Arc::new(SpanCounts::default());
    tracing::subscriber::set_global_default(Counter(spans.clone())).unwrap();
    // The headless trace counts the same zones on every thread, the build's parallel tasks
    // included: the two must agree exactly.
    acm::profiling::start_trace();
    let scene = profile::builtin(&[]).unwrap();
    let mut sim = Simulation::new(&scene).unwrap();
    sim.run_until(0.05, &mut NoFrames).unwrap();
    let totals = acm::profiling::finish_trace(&mut std::io::sink()).unwrap();
    let spans = spans.counts.lock().unwrap().clone();
    let zones: BTreeMap<&'static str, u64> =
        totals.zones.iter().map(|(k, t)| (*k, t.count)).collect();
    assert_eq!(spans, zones);
    for phase in ["event", "force", "snapshot", "broad_phase"] {
        assert!(
            spans.get(phase).copied().unwrap_or(0) > 0,
            "{phase}: {spans:?}"
        );
    }
}
