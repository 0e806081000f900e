//! Profiling zones: Tracy spans behind the `profile-tracy` feature, `tracing` spans behind the
//! `tracing` feature, and a headless trace.
//!
//! `let _z = zone!("name");` opens a zone that closes when `_z` drops. The same zones feed three
//! consumers:
//! - **Tracy** (`--features profile-tracy`): every zone is a Tracy span; connect the Tracy
//!   viewer to the running process (see `profiles/README.md`).
//! - **`tracing`** (`--features tracing`): every zone is a `tracing` span at `TRACE` level,
//!   named after the zone, with the module that opened it as its target (`acm::engine`, ...), so
//!   a program's own subscriber (`tracing-tracy`, `tracing-chrome`, ...) sees acm's phases.
//! - **Headless trace** ([`start_trace`] / [`finish_trace`], `acm run --trace FILE`): zones are
//!   timed into per-thread buffers and written as a Chrome/Perfetto JSON trace, plus a total per
//!   zone name. Off by default; then a zone costs one relaxed atomic load.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Opens a profiling zone named by a string literal until the returned guard drops: a Tracy span
/// and a `tracing` span when those features are on, and a timed record while a headless trace
/// runs.
macro_rules! zone {
    ($name:literal) => {
        $crate::profile::Zone {
            #[cfg(feature = "profile-tracy")]
            _tracy: ::tracy_client::span!($name),
            #[cfg(feature = "tracing")]
            _tracing: ::tracing::trace_span!($name).entered(),
            timed: $crate::profile::Zone::timed($name),
        }
    };
}

pub(crate) use zone;

/// Most zone records a trace keeps in full; later zones still count in the per-name totals.
/// (A 1 s drape opens tens of millions of zones; their records would fill gigabytes.)
pub const TRACE_RECORD_LIMIT: usize = 2_000_000;

static TRACING: AtomicBool = AtomicBool::new(false);
static TRACE: Mutex<Option<Trace>> = Mutex::new(None);

thread_local! {
    static BUFFER: RefCell<Vec<Record>> = const { RefCell::new(Vec::new()) };
}

/// One closed zone.
#[derive(Clone, Copy, Debug)]
struct Record {
    name: &'static str,
    start: Instant,
    end: Instant,
}

/// Everything the trace has collected so far.
#[derive(Debug)]
struct Trace {
    origin: Instant,
    records: Vec<(u64, Record)>,
    totals: BTreeMap<&'static str, ZoneTotal>,
}

/// How often a zone was opened and how long it stayed open, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ZoneTotal {
    /// Zones of this name closed.
    pub count: u64,
    /// Their inclusive time, summed (s).
    pub seconds: f64,
}

/// A profiling zone (see the module docs); closes when dropped. Open one with `zone!`.
#[must_use = "a zone closes when the guard drops"]
pub struct Zone {
    /// The Tracy span.
    #[cfg(feature = "profile-tracy")]
    pub(crate) _tracy: tracy_client::Span,
    /// The `tracing` span, entered.
    #[cfg(feature = "tracing")]
    pub(crate) _tracing: tracing::span::EnteredSpan,
    /// Name and start while a headless trace runs.
    pub(crate) timed: Option<(&'static str, Instant)>,
}

impl Zone {
    /// The name and start of zone `name` if a headless trace is running.
    #[inline]
    pub(crate) fn timed(name: &'static str) -> Option<(&'static str, Instant)> {
        TRACING
            .load(Ordering::Relaxed)
            .then(|| (name, Instant::now()))
    }
}

impl std::fmt::Debug for Zone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zone").field("timed", &self.timed).finish()
    }
}

impl Drop for Zone {
    #[inline]
    fn drop(&mut self) {
        if let Some((name, start)) = self.timed {
            let end = Instant::now();
            let full = BUFFER.with(|b| {
                let mut b = b.borrow_mut();
                b.push(Record { name, start, end });
                b.len() >= 4096
            });
            if full {
                flush_thread();
            }
        }
    }
}

/// Moves this thread's buffered zones into the trace (the loop calls it when a run returns, so
/// a trace holds every zone of the thread that ran it).
pub(crate) fn flush_thread() {
    let records = BUFFER.with(|b| std::mem::take(&mut *b.borrow_mut()));
    if records.is_empty() {
        return;
    }
    let mut guard = TRACE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(trace) = guard.as_mut() else {
        return;
    };
    let thread = thread_id();
    for r in records {
        let total = trace.totals.entry(r.name).or_default();
        total.count += 1;
        total.seconds += (r.end - r.start).as_secs_f64();
        if trace.records.len() < TRACE_RECORD_LIMIT {
            trace.records.push((thread, r));
        }
    }
}

/// Flushes this thread and every worker of the current rayon pool (a run calls it when it
/// returns, so a trace holds the zones of the workers that ran its parallel phases).
pub(crate) fn flush_workers() {
    flush_thread();
    if TRACING.load(Ordering::Relaxed) {
        rayon::broadcast(|_| flush_thread());
    }
}

/// A small id for the current thread, numbered in order of first use.
fn thread_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static ID: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    ID.with(|id| *id)
}

/// Starts the Tracy client if the `profile-tracy` feature is on (a no-op otherwise). Call once at
/// program start; the Tracy viewer can then connect to the running process.
pub fn start() {
    #[cfg(feature = "profile-tracy")]
    {
        tracy_client::Client::start();
    }
}

/// Starts collecting zones for a headless trace (see [`finish_trace`]).
pub fn start_trace() {
    let mut guard = TRACE.lock().unwrap_or_else(|e| e.into_inner());
    *guard = Some(Trace {
        origin: Instant::now(),
        records: Vec::new(),
        totals: BTreeMap::new(),
    });
    TRACING.store(true, Ordering::Relaxed);
}

/// Stops collecting and writes the trace as Chrome/Perfetto JSON (open it in
/// `ui.perfetto.dev` or `chrome://tracing`) to `out`. Returns the total per zone name.
///
/// Zones closed on other threads reach the trace when those threads flush their buffers: every
/// 4,096 zones, and (the workers of the pool the run used) when
/// [`Simulation::run_until`](crate::Simulation::run_until) returns.
pub fn finish_trace(out: &mut dyn Write) -> std::io::Result<BTreeMap<&'static str, ZoneTotal>> {
    flush_thread();
    TRACING.store(false, Ordering::Relaxed);
    let trace = TRACE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or(Trace {
            origin: Instant::now(),
            records: Vec::new(),
            totals: BTreeMap::new(),
        });
    write!(out, "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[")?;
    for (k, (tid, r)) in trace.records.iter().enumerate() {
        let ts = r
            .start
            .saturating_duration_since(trace.origin)
            .as_secs_f64()
            * 1e6;
        let dur = (r.end - r.start).as_secs_f64() * 1e6;
        let sep = if k == 0 { "" } else { "," };
        write!(
            out,
            "{sep}\n{{\"name\":\"{}\",\"ph\":\"X\",\"pid\":1,\"tid\":{tid},\"ts\":{ts:.3},\"dur\":{dur:.3}}}",
            r.name
        )?;
    }
    let totals = serde_json::to_string(&trace.totals).map_err(std::io::Error::other)?;
    write!(out, "\n],\"otherData\":{{\"zone_totals\":{totals}}}}}")?;
    Ok(trace.totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_records_nested_zones_as_chrome_json() {
        start_trace();
        {
            let _outer = zone!("outer");
            for _ in 0..3 {
                let _inner = zone!("inner");
            }
        }
        let mut json = Vec::new();
        let totals = finish_trace(&mut json).unwrap();
        assert_eq!(totals["inner"].count, 3);
        assert_eq!(totals["outer"].count, 1);
        assert!(totals["outer"].seconds >= totals["inner"].seconds);
        let parsed: serde_json::Value = serde_json::from_slice(&json).unwrap();
        // Other tests' zones may land in the trace too: look at this test's only.
        let ours: Vec<_> = parsed["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "inner" || e["name"] == "outer")
            .collect();
        assert_eq!(ours.len(), 4);
        assert!(ours
            .iter()
            .all(|e| e["ph"] == "X" && e["dur"].as_f64().unwrap() >= 0.0));
        let _after = zone!("not recorded");
        drop(_after);
        assert_eq!(
            BUFFER.with(|b| b.borrow().len()),
            0,
            "zones after the trace are not kept"
        );
    }
}
