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
//!
//! A zone whose name ends in `_task` is one worker's share of a parallel phase. The headless
//! trace also times every other zone *outside tasks*: its time minus the time its own thread
//! spent in task zones meanwhile. Summed over the outermost zones, that is the time the thread
//! that runs the loop did not spend on a share of parallel work: serial work, waiting at a
//! join for the other workers, and parallel work that opens no task zone.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Opens a profiling zone named by a string literal until the returned guard drops: a Tracy span
/// and a `tracing` span when those features are on, and a timed record while a headless trace
/// runs.
macro_rules! zone {
    ($name:literal) => {
        $crate::profiling::Zone {
            #[cfg(feature = "profile-tracy")]
            _tracy: ::tracy_client::span!($name),
            #[cfg(feature = "tracing")]
            _tracing: ::tracing::trace_span!($name).entered(),
            timed: $crate::profiling::Zone::timed($name),
        }
    };
}

pub(crate) use zone;

/// Most zone records a trace keeps in full; later zones still count in the per-name totals.
/// (A 1 s drape opens tens of millions of zones; their records would fill gigabytes.)
pub(crate) const TRACE_RECORD_LIMIT: usize = 2_000_000;

static TRACING: AtomicBool = AtomicBool::new(false);
static TRACE: Mutex<Option<Trace>> = Mutex::new(None);

thread_local! {
    static BUFFER: RefCell<Vec<Record>> = const { RefCell::new(Vec::new()) };
    static NESTING: Cell<Nesting> = const { Cell::new(Nesting::NONE) };
}

/// Whether zone `name` is one worker's share of a parallel phase (its name ends in `_task`).
pub fn is_task(name: &str) -> bool {
    name.ends_with("_task")
}

/// A thread's open timed zones: how many, how many of them tasks, and the time the thread has
/// spent in outermost task zones so far.
#[derive(Clone, Copy, Debug)]
struct Nesting {
    zones: u32,
    tasks: u32,
    in_tasks: Duration,
}

impl Nesting {
    const NONE: Self = Self {
        zones: 0,
        tasks: 0,
        in_tasks: Duration::ZERO,
    };
}

/// A timed zone while it is open.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opened {
    name: &'static str,
    start: Instant,
    /// The thread's time in task zones when this zone opened.
    in_tasks: Duration,
    /// Opened with no other zone open on its thread.
    outermost: bool,
    /// Opened inside a task zone (or is one): none of its time is outside tasks.
    inside_task: bool,
}

/// One closed zone.
#[derive(Clone, Copy, Debug)]
struct Record {
    name: &'static str,
    start: Instant,
    end: Instant,
    /// Its time minus its thread's time in task zones meanwhile.
    outside_tasks: Duration,
    outermost: bool,
}

/// Everything the trace has collected so far.
#[derive(Debug)]
struct Trace {
    origin: Instant,
    records: Vec<(u64, Record)>,
    totals: TraceTotals,
    /// Each thread's name in the trace viewer, by thread id.
    thread_names: BTreeMap<u64, String>,
}

/// The totals of a headless trace.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct TraceTotals {
    /// Per zone name.
    pub zones: BTreeMap<&'static str, ZoneTotal>,
    /// The outermost zones' time outside tasks, summed (s): on the thread that runs the loop,
    /// the time of the zones it opened that was not a share of parallel work (see the module
    /// docs).
    pub outside_tasks: f64,
}

/// How often a zone was opened and how long it stayed open, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ZoneTotal {
    /// Zones of this name closed.
    pub count: u64,
    /// Their inclusive time, summed (s).
    pub seconds: f64,
    /// Their time outside task zones on their own threads, summed (s); zero for task zones.
    pub outside_tasks: f64,
}

/// A profiling zone (see the module docs); closes when dropped. Open one with `zone!`.
#[must_use = "a zone closes when the guard drops"]
pub(crate) struct Zone {
    /// The Tracy span.
    #[cfg(feature = "profile-tracy")]
    pub(crate) _tracy: tracy_client::Span,
    /// The `tracing` span, entered.
    #[cfg(feature = "tracing")]
    pub(crate) _tracing: tracing::span::EnteredSpan,
    /// The zone as opened while a headless trace runs.
    pub(crate) timed: Option<Opened>,
}

impl Zone {
    /// Opens zone `name` for the headless trace if one is running.
    #[inline]
    pub(crate) fn timed(name: &'static str) -> Option<Opened> {
        if !TRACING.load(Ordering::Relaxed) {
            return None;
        }
        let task = is_task(name);
        Some(NESTING.with(|cell| {
            let mut nesting = cell.get();
            let opened = Opened {
                name,
                start: Instant::now(),
                in_tasks: nesting.in_tasks,
                outermost: nesting.zones == 0,
                inside_task: task || nesting.tasks > 0,
            };
            nesting.zones += 1;
            nesting.tasks += u32::from(task);
            cell.set(nesting);
            opened
        }))
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
        if let Some(opened) = self.timed {
            let end = Instant::now();
            let time = end - opened.start;
            let in_tasks = NESTING.with(|cell| {
                let mut nesting = cell.get();
                nesting.zones -= 1;
                if is_task(opened.name) {
                    nesting.tasks -= 1;
                    if nesting.tasks == 0 {
                        nesting.in_tasks += time;
                    }
                }
                cell.set(nesting);
                nesting.in_tasks
            });
            let outside_tasks = if opened.inside_task {
                Duration::ZERO
            } else {
                time.saturating_sub(in_tasks - opened.in_tasks)
            };
            let record = Record {
                name: opened.name,
                start: opened.start,
                end,
                outside_tasks,
                outermost: opened.outermost,
            };
            let full = BUFFER.with(|b| {
                let mut b = b.borrow_mut();
                b.push(record);
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
    flush_thread_as(None);
}

/// [`flush_thread`], naming the thread `role` in the trace (else by its rayon worker index or
/// its own name).
fn flush_thread_as(role: Option<&str>) {
    let records = BUFFER.with(|b| std::mem::take(&mut *b.borrow_mut()));
    if records.is_empty() {
        return;
    }
    let mut guard = TRACE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(trace) = guard.as_mut() else {
        return;
    };
    let thread = thread_id();
    let worker = rayon::current_thread_index().map(|i| format!("worker {i}"));
    let name = match (role, worker) {
        (Some(role), Some(worker)) => format!("{role} ({worker})"),
        (Some(role), None) => role.to_string(),
        (None, Some(worker)) => worker,
        (None, None) => std::thread::current()
            .name()
            .map_or_else(|| format!("thread {thread}"), str::to_string),
    };
    trace.thread_names.insert(thread, name);
    for r in records {
        let total = trace.totals.zones.entry(r.name).or_default();
        total.count += 1;
        total.seconds += (r.end - r.start).as_secs_f64();
        total.outside_tasks += r.outside_tasks.as_secs_f64();
        if r.outermost {
            trace.totals.outside_tasks += r.outside_tasks.as_secs_f64();
        }
        if trace.records.len() < TRACE_RECORD_LIMIT {
            trace.records.push((thread, r));
        }
    }
}

/// Flushes this thread and every worker of the current rayon pool (a run calls it when it
/// returns, so a trace holds the zones of the workers that ran its parallel phases).
pub(crate) fn flush_workers() {
    flush_thread_as(Some("event loop"));
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
        totals: TraceTotals::default(),
        thread_names: BTreeMap::new(),
    });
    TRACING.store(true, Ordering::Relaxed);
}

/// Stops collecting and writes the trace as Chrome/Perfetto JSON (open it in
/// `ui.perfetto.dev` or `chrome://tracing`) to `out`. Returns the totals per zone name and
/// the time outside tasks.
///
/// Zones closed on other threads reach the trace when those threads flush their buffers: every
/// 4,096 zones, and (the workers of the pool the run used) when
/// [`Stepper::run_until`](crate::Stepper::run_until) returns.
pub fn finish_trace(out: &mut dyn Write) -> std::io::Result<TraceTotals> {
    flush_thread();
    TRACING.store(false, Ordering::Relaxed);
    let trace = TRACE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or(Trace {
            origin: Instant::now(),
            records: Vec::new(),
            totals: TraceTotals::default(),
            thread_names: BTreeMap::new(),
        });
    write!(out, "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[")?;
    // Metadata events first: the name Perfetto shows for each thread.
    let mut sep = "";
    for (tid, name) in &trace.thread_names {
        let name = serde_json::to_string(name).map_err(std::io::Error::other)?;
        write!(
            out,
            "{sep}\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\"args\":{{\"name\":{name}}}}}"
        )?;
        sep = ",";
    }
    for (tid, r) in &trace.records {
        let ts = r
            .start
            .saturating_duration_since(trace.origin)
            .as_secs_f64()
            * 1e6;
        let dur = (r.end - r.start).as_secs_f64() * 1e6;
        write!(
            out,
            "{sep}\n{{\"name\":\"{}\",\"ph\":\"X\",\"pid\":1,\"tid\":{tid},\"ts\":{ts:.3},\"dur\":{dur:.3}}}",
            r.name
        )?;
        sep = ",";
    }
    let zones = serde_json::to_string(&trace.totals.zones).map_err(std::io::Error::other)?;
    let outside = trace.totals.outside_tasks;
    write!(
        out,
        "\n],\"otherData\":{{\"zone_totals\":{zones},\"outside_tasks\":{outside}}}}}"
    )?;
    Ok(trace.totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `probe` with a task zone around it and returns how long that took, at least as long
    /// as the zone was open.
    fn timed_task(probe: impl FnOnce()) -> f64 {
        let start = Instant::now();
        {
            let _task = zone!("probe_task");
            probe();
        }
        start.elapsed().as_secs_f64()
    }

    #[test]
    fn a_trace_records_nested_zones_as_chrome_json() {
        start_trace();
        let sleep = |ms| std::thread::sleep(Duration::from_millis(ms));
        let mut own_task = 0.0;
        {
            let _outer = zone!("outer");
            for _ in 0..3 {
                let _inner = zone!("inner");
            }
            std::thread::scope(|scope| {
                // Another thread's task does not take time from this thread's zones.
                scope.spawn(|| {
                    timed_task(|| sleep(10));
                    flush_thread();
                });
                sleep(20);
                // A task inside a task counts once.
                own_task = timed_task(|| {
                    sleep(10);
                    timed_task(|| sleep(5));
                });
            });
        }
        let mut json = Vec::new();
        let totals = finish_trace(&mut json).unwrap().zones;
        assert_eq!(totals["inner"].count, 3);
        assert_eq!(totals["outer"].count, 1);
        assert!(totals["outer"].seconds >= totals["inner"].seconds);
        assert_eq!(totals["probe_task"].count, 3);
        assert_eq!(totals["probe_task"].outside_tasks, 0.0);
        let outer = totals["outer"];
        assert!(outer.outside_tasks >= 0.02, "{outer:?}");
        assert!(outer.outside_tasks <= outer.seconds - 0.015, "{outer:?}");
        assert!(
            outer.outside_tasks >= outer.seconds - own_task - 1e-9,
            "{outer:?}, own task {own_task} s"
        );
        let parsed: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert!(parsed["otherData"]["outside_tasks"].as_f64().unwrap() >= 0.02);
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
        // Every thread with zones has a name for the trace viewer.
        let events = parsed["traceEvents"].as_array().unwrap();
        let named: Vec<_> = events.iter().filter(|e| e["ph"] == "M").collect();
        assert!(
            named
                .iter()
                .all(|e| e["name"] == "thread_name"
                    && !e["args"]["name"].as_str().unwrap().is_empty())
        );
        for e in events.iter().filter(|e| e["ph"] == "X") {
            assert!(named.iter().any(|m| m["tid"] == e["tid"]), "{e}");
        }
        let _after = zone!("not recorded");
        drop(_after);
        assert_eq!(
            BUFFER.with(|b| b.borrow().len()),
            0,
            "zones after the trace are not kept"
        );
    }
}
