//! `acm scaling`: a run's wall time on more threads, predicted from its traces on one thread
//! and on two (`acm run ... --trace FILE`).
//!
//! **The model.** The thread that runs the event loop spends its time in outermost zones
//! (phases: an event, a whole-mesh re-time, a broad-phase pass) and between them. The two runs
//! are the same run (frames are identical on any number of threads), so their phases match one
//! for one. A phase whose tasks ran on both threads of the two-thread run is *parallel*: on one
//! thread its task time is its work `w` and the rest of it serial `s`, and what it took on two
//! threads beyond `s + w / 2` is its *fork cost* `c`: handing the work to the other worker,
//! waiting for it at the join, imbalance between the shares, data moving between the cores'
//! caches. A phase that ran on one thread of the two is serial. On `p` threads the model
//! predicts
//!
//! `T(p) = b + sum over phases (s + w / p + c)`,
//!
//! holding every fork's cost and the loop's time between phases `b` at what they were on two
//! threads, and the bound `b + sum (s + w / p)` with no fork costs (Amdahl's law; `b` of one
//! thread). By construction `T(2)` is the two-thread run's time; the model's use is what it
//! says of 16 threads: the serial part and the number and cost of forks bound the speed-up,
//! whatever the work. Fork costs that grow with the thread count make it optimistic
//! (`docs/speed.md` compares it with a 16-core machine).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acm::profiling::is_task;
use clap::Args;

use crate::Failure;

#[derive(Args)]
pub(crate) struct ScalingArgs {
    /// Trace of a run on one thread (`acm run ... --threads 1 --trace ONE`).
    one: PathBuf,
    /// Trace of the same run on two threads (`--threads 2 --trace TWO`).
    two: PathBuf,
    /// Thread counts to predict, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16")]
    threads: Vec<usize>,
}

/// One outermost zone of the event loop's thread.
#[derive(Clone, Debug, PartialEq)]
struct Phase {
    name: String,
    /// Its wall time (us).
    wall: f64,
    /// The task time of every thread within it (us).
    work: f64,
    /// The threads that ran its tasks.
    threads: usize,
}

/// The event loop's thread in a trace: its phases in order, and its time between them (us).
#[derive(Debug)]
struct Timeline {
    phases: Vec<Phase>,
    /// Start of each phase (us), for the time between phases.
    starts: Vec<f64>,
    /// Threads that recorded zones.
    threads: usize,
    /// Whether the trace was cut before the run's end (its last phase may be a fragment).
    truncated: bool,
}

impl Timeline {
    /// The time between phases over the first `n` phases (us).
    fn between(&self, n: usize) -> f64 {
        if n == 0 {
            return 0.0;
        }
        let span = self.starts[n - 1] + self.phases[n - 1].wall - self.starts[0];
        span - self.phases[..n].iter().map(|p| p.wall).sum::<f64>()
    }
}

/// A Chrome/Perfetto JSON trace as `acm run --trace` writes it.
#[derive(serde::Deserialize)]
struct TraceFile<'a> {
    #[serde(rename = "traceEvents", borrow)]
    events: Vec<Event<'a>>,
    #[serde(rename = "otherData", default)]
    other: OtherData,
}

/// The totals after the records: how many zones the run closed, recorded or not.
#[derive(serde::Deserialize, Default)]
struct OtherData {
    #[serde(default)]
    zone_totals: BTreeMap<String, ZoneCount>,
}

/// How many zones of one name closed.
#[derive(serde::Deserialize)]
struct ZoneCount {
    count: usize,
}

/// A trace event: a zone (`"ph": "X"`, start `ts` and duration `dur` in us) or metadata.
#[derive(serde::Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    ph: Cow<'a, str>,
    tid: u64,
    #[serde(default)]
    ts: f64,
    #[serde(default)]
    dur: f64,
}

/// Reads the event loop's timeline from trace file `path`.
fn read_timeline(path: &Path) -> Result<Timeline, String> {
    let shown = path.display();
    let text = std::fs::read(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let trace: TraceFile<'_> = serde_json::from_slice(&text)
        .map_err(|e| format!("{shown}: not a trace written by `acm run --trace`: {e}"))?;
    timeline(&trace).map_err(|e| format!("{shown}: {e}"))
}

/// The event loop's timeline in `trace`.
///
/// A trace keeps the records of a run's first zones only (`TRACE_RECORD_LIMIT`); each thread
/// hands its records over in batches, so where a trace was cut, the records of the last
/// moments are missing from some threads. Such a timeline ends where the thread whose records
/// end first stops.
fn timeline(trace: &TraceFile<'_>) -> Result<Timeline, String> {
    let zones: Vec<&Event<'_>> = (trace.events.iter()).filter(|e| e.ph == "X").collect();
    let closed: usize = trace.other.zone_totals.values().map(|z| z.count).sum();
    let truncated = closed > zones.len();
    // The event loop's thread opens the phases; the other workers open only tasks (and zones
    // within them).
    let mut phase_zones: BTreeMap<u64, usize> = BTreeMap::new();
    for zone in zones.iter().filter(|e| !is_task(&e.name)) {
        *phase_zones.entry(zone.tid).or_default() += 1;
    }
    let loop_thread = (phase_zones.iter())
        .max_by_key(|&(&tid, &count)| (count, std::cmp::Reverse(tid)))
        .map(|(&tid, _)| tid)
        .ok_or("no zones outside tasks: not a trace of `acm run --trace`")?;
    let mut last_end: BTreeMap<u64, f64> = BTreeMap::new();
    for zone in &zones {
        let end = last_end.entry(zone.tid).or_insert(f64::NEG_INFINITY);
        *end = end.max(zone.ts + zone.dur);
    }
    let threads = last_end.len();
    let complete_until = if truncated {
        last_end.values().copied().fold(f64::INFINITY, f64::min)
    } else {
        f64::INFINITY
    };
    let mut tasks: Vec<(f64, f64, u64)> = (zones.iter())
        .filter(|e| is_task(&e.name))
        .map(|e| (e.ts, e.dur, e.tid))
        .collect();
    tasks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut own: Vec<&Event<'_>> = (zones.iter().copied())
        .filter(|e| e.tid == loop_thread && !is_task(&e.name))
        .collect();
    // Outer before inner where two start together.
    own.sort_by(|a, b| a.ts.total_cmp(&b.ts).then(b.dur.total_cmp(&a.dur)));
    let (mut phases, mut starts) = (Vec::new(), Vec::new());
    let mut end = f64::NEG_INFINITY;
    for zone in own {
        if zone.ts < end {
            continue; // Nested in the phase before.
        }
        end = zone.ts + zone.dur;
        if end > complete_until {
            break;
        }
        let first = tasks.partition_point(|t| t.0 < zone.ts);
        let within = &tasks[first..][..tasks[first..].partition_point(|t| t.0 < end)];
        let mut workers: Vec<u64> = within.iter().map(|t| t.2).collect();
        workers.sort_unstable();
        workers.dedup();
        phases.push(Phase {
            name: zone.name.to_string(),
            wall: zone.dur,
            work: within.iter().map(|t| t.1).sum(),
            threads: workers.len(),
        });
        starts.push(zone.ts);
    }
    if phases.is_empty() {
        return Err("no whole phase of the event loop in the trace".into());
    }
    Ok(Timeline {
        phases,
        starts,
        threads,
        truncated,
    })
}

/// One kind of phase, summed over its occurrences (us).
#[derive(Clone, Debug, Default, PartialEq)]
struct PhaseCost {
    count: usize,
    /// Occurrences whose tasks ran on both threads of the two-thread run.
    parallel: usize,
    one_thread: f64,
    serial: f64,
    work: f64,
    two_threads: f64,
    /// What the two-thread run took beyond `s + w / 2` in the parallel occurrences (their
    /// fork costs), and beyond the one-thread time in the serial ones.
    forks: f64,
}

/// The model of a run, from its two timelines.
#[derive(Debug, PartialEq)]
struct Model {
    /// Per phase name.
    phases: BTreeMap<String, PhaseCost>,
    /// Phases compared (the common start of the two traces).
    compared: usize,
    /// Time between phases on one thread and on two (us).
    between: (f64, f64),
}

impl Model {
    /// The model of the run traced on one thread in `one` and on two in `two`.
    fn new(one: &Timeline, two: &Timeline) -> Result<Self, String> {
        let mut phases: BTreeMap<String, PhaseCost> = BTreeMap::new();
        let mut compared = one.phases.len().min(two.phases.len());
        for (k, (a, b)) in one.phases.iter().zip(&two.phases).enumerate() {
            let last = |t: &Timeline| t.truncated && k + 1 == t.phases.len();
            if a.name != b.name && (last(one) || last(two)) {
                compared = k;
                break;
            }
            if a.name != b.name {
                return Err(format!(
                    "the traces are not of the same run: phase {k} is `{}` in the first and \
                     `{}` in the second",
                    a.name, b.name
                ));
            }
            let cost = phases.entry(a.name.clone()).or_default();
            cost.count += 1;
            cost.one_thread += a.wall;
            cost.two_threads += b.wall;
            if b.threads >= 2 {
                cost.parallel += 1;
                cost.serial += a.wall - a.work;
                cost.work += a.work;
                cost.forks += b.wall - (a.wall - a.work) - 0.5 * a.work;
            } else {
                cost.serial += a.wall;
                cost.forks += b.wall - a.wall;
            }
        }
        let (n1, n2) = (one.phases.len(), two.phases.len());
        if n1 != n2 && !one.truncated && !two.truncated {
            return Err(format!(
                "the traces are not of the same run: {n1} phases in the first, {n2} in the \
                 second"
            ));
        }
        Ok(Self {
            phases,
            compared,
            between: (one.between(compared), two.between(compared)),
        })
    }

    /// The time on one thread (us).
    fn one_thread(&self) -> f64 {
        self.between.0 + self.phases.values().map(|c| c.one_thread).sum::<f64>()
    }

    /// The predicted time on `p` threads (us): with the fork costs (and the time between
    /// phases) of two threads, or with none (and the time between phases of one).
    fn predicted(&self, p: usize, with_forks: bool) -> f64 {
        let p = p as f64;
        let (between, forks) = if with_forks {
            (self.between.1, 1.0)
        } else {
            (self.between.0, 0.0)
        };
        between
            + (self.phases.values())
                .map(|c| c.serial + c.work / p + forks * c.forks)
                .sum::<f64>()
    }
}

/// `acm scaling ONE TWO`: prints the model's table and predictions.
pub(crate) fn scaling(args: ScalingArgs) -> Result<(), Failure> {
    if let Some(&bad) = args.threads.iter().find(|&&p| p == 0) {
        return Err(Failure::BadInput(format!(
            "--threads: thread counts must be at least 1, got {bad}"
        )));
    }
    let one = read_timeline(&args.one).map_err(Failure::BadInput)?;
    let two = read_timeline(&args.two).map_err(Failure::BadInput)?;
    // A two-thread run whose second worker took no task shows one thread: it is still two.
    for (trace, path, most) in [(&one, &args.one, 1), (&two, &args.two, 2)] {
        if trace.threads > most {
            return Err(Failure::BadInput(format!(
                "{}: traced on {} threads; expected a run on {most} (`--threads {most}`)",
                path.display(),
                trace.threads
            )));
        }
    }
    let model = Model::new(&one, &two).map_err(Failure::BadInput)?;
    print!("{}", report(&model, &args.threads, (&one, &two)));
    Ok(())
}

/// The printed table and predictions.
fn report(model: &Model, threads: &[usize], (one, two): (&Timeline, &Timeline)) -> String {
    use std::fmt::Write as _;
    let ms = |us: f64| us / 1e3;
    let mut out = String::new();
    let (n1, n2) = (one.phases.len(), two.phases.len());
    let _ = writeln!(
        out,
        "{} phases of the event loop compared (the first {} of {n1} on one thread and of {n2} \
         on two)",
        model.compared, model.compared
    );
    if one.truncated || two.truncated {
        let _ = writeln!(
            out,
            "(a trace keeps the first 2,000,000 zones of a run: trace a shorter run to compare \
             it whole)"
        );
    }
    let _ = writeln!(
        out,
        "{:<16} {:>9} {:>9} {:>11} {:>10} {:>11} {:>11} {:>10}",
        "phase",
        "count",
        "parallel",
        "1 thread ms",
        "serial ms",
        "parallel ms",
        "2 threads ms",
        "fork us"
    );
    let mut rows: Vec<(&String, &PhaseCost)> = model.phases.iter().collect();
    rows.sort_by(|a, b| b.1.one_thread.total_cmp(&a.1.one_thread));
    for (name, c) in rows {
        let per_fork = if c.parallel > 0 {
            format!("{:.2}", c.forks / c.parallel as f64)
        } else {
            "-".into()
        };
        let _ = writeln!(
            out,
            "{name:<16} {:>9} {:>9} {:>11.1} {:>10.1} {:>11.1} {:>11.1} {per_fork:>10}",
            c.count,
            c.parallel,
            ms(c.one_thread),
            ms(c.serial),
            ms(c.work),
            ms(c.two_threads),
        );
    }
    let _ = writeln!(
        out,
        "{:<16} {:>9} {:>9} {:>11.1} {:>10.1} {:>11} {:>11.1}",
        "between phases",
        "",
        "",
        ms(model.between.0),
        ms(model.between.0),
        "",
        ms(model.between.1)
    );
    let total = model.one_thread();
    let measured = model.between.1 + model.phases.values().map(|c| c.two_threads).sum::<f64>();
    let sum = |f: fn(&PhaseCost) -> f64| model.phases.values().map(f).sum::<f64>();
    let _ = writeln!(
        out,
        "one thread {:.1} ms: serial {:.1} ms ({:.1}%), parallel work {:.1} ms; fork costs on \
         two threads {:.1} ms",
        ms(total),
        ms(model.between.0 + sum(|c| c.serial)),
        100.0 * (model.between.0 + sum(|c| c.serial)) / total,
        ms(sum(|c| c.work)),
        ms(sum(|c| c.forks)),
    );
    let _ = writeln!(
        out,
        "measured on two threads: {:.2}x one thread",
        total / measured
    );
    let _ = write!(out, "{:<34}", "threads");
    for p in threads {
        let _ = write!(out, "{p:>8}");
    }
    for (label, with_forks) in [
        ("speed-up, forks as on two threads", true),
        ("speed-up, no fork costs (Amdahl)", false),
    ] {
        let _ = write!(out, "\n{label:<34}");
        for &p in threads {
            let _ = write!(out, "{:>7.2}x", total / model.predicted(p, with_forks));
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(name: &str, wall: f64, work: f64, threads: usize) -> Phase {
        Phase {
            name: name.into(),
            wall,
            work,
            threads,
        }
    }

    /// A timeline of back-to-back phases.
    fn timeline(phases: Vec<Phase>, threads: usize) -> Timeline {
        let starts = (phases.iter())
            .scan(0.0, |t, p| {
                let start = *t;
                *t += p.wall;
                Some(start)
            })
            .collect();
        Timeline {
            phases,
            starts,
            threads,
            truncated: false,
        }
    }

    #[test]
    fn the_model_divides_the_work_and_keeps_the_serial_part_and_the_fork_costs() {
        // A: 20 us serial and 80 us of work, 60 us on two threads (no fork cost); B: serial,
        // 50 us; C: 10 us serial and 40 us of work, 40 us on two threads (a 10 us fork cost).
        let one = timeline(
            vec![
                phase("A", 100.0, 80.0, 1),
                phase("B", 50.0, 0.0, 0),
                phase("C", 50.0, 40.0, 1),
            ],
            1,
        );
        let two = timeline(
            vec![
                phase("A", 60.0, 80.0, 2),
                phase("B", 50.0, 0.0, 0),
                phase("C", 40.0, 40.0, 3),
            ],
            2,
        );
        let model = Model::new(&one, &two).unwrap();
        assert_eq!(model.one_thread(), 200.0);
        // Two threads: the measured 150 us.
        assert_eq!(model.predicted(2, true), 150.0);
        // Four: 20 + 20 + 50 + 10 + 10 + 10.
        assert_eq!(model.predicted(4, true), 120.0);
        assert_eq!(model.predicted(4, false), 110.0);
        let c = &model.phases["C"];
        assert_eq!((c.serial, c.work, c.forks), (10.0, 40.0, 10.0));
    }

    #[test]
    fn a_phase_that_did_not_split_on_two_threads_counts_as_serial() {
        let one = timeline(vec![phase("A", 100.0, 90.0, 1)], 1);
        let two = timeline(vec![phase("A", 101.0, 90.0, 1)], 2);
        let model = Model::new(&one, &two).unwrap();
        assert_eq!(model.phases["A"].serial, 100.0);
        assert_eq!(model.predicted(16, true), 101.0);
    }

    #[test]
    fn traces_of_different_runs_are_refused_naming_the_first_difference() {
        let one = timeline(vec![phase("A", 1.0, 0.0, 0), phase("B", 1.0, 0.0, 0)], 1);
        let two = timeline(vec![phase("A", 1.0, 0.0, 0), phase("C", 1.0, 0.0, 0)], 2);
        let e = Model::new(&one, &two).unwrap_err();
        assert!(
            e.contains("phase 1 is `B` in the first and `C` in the second"),
            "{e}"
        );
        let longer = timeline(vec![phase("A", 1.0, 0.0, 0); 3], 2);
        let shorter = timeline(vec![phase("A", 1.0, 0.0, 0); 2], 1);
        let e = Model::new(&shorter, &longer).unwrap_err();
        assert!(e.contains("2 phases in the first, 3 in the second"), "{e}");
    }

    #[test]
    fn a_cut_trace_is_compared_up_to_its_last_whole_phase() {
        let one = timeline(vec![phase("A", 10.0, 0.0, 0); 3], 1);
        let mut two = timeline(
            vec![
                phase("A", 10.0, 0.0, 0),
                phase("A", 10.0, 0.0, 0),
                phase("pop", 1.0, 0.0, 0),
            ],
            2,
        );
        let e = Model::new(&one, &two).unwrap_err();
        assert!(e.contains("phase 2 is `A` in the first and `pop`"), "{e}");
        two.truncated = true;
        let model = Model::new(&one, &two).unwrap();
        assert_eq!((model.compared, model.one_thread()), (2, 20.0));
    }

    #[test]
    fn the_timeline_takes_outermost_zones_and_the_tasks_within_them() {
        let json = r#"{"traceEvents":[
            {"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"event loop (worker 0)"}},
            {"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"worker 1"}},
            {"name":"event","ph":"X","pid":1,"tid":1,"ts":10.0,"dur":30.0},
            {"name":"force","ph":"X","pid":1,"tid":1,"ts":12.0,"dur":20.0},
            {"name":"force_task","ph":"X","pid":1,"tid":1,"ts":13.0,"dur":8.0},
            {"name":"force_task","ph":"X","pid":1,"tid":2,"ts":14.0,"dur":9.0},
            {"name":"reschedule_all","ph":"X","pid":1,"tid":1,"ts":45.0,"dur":5.0}
        ]}"#;
        let trace: TraceFile<'_> = serde_json::from_str(json).unwrap();
        let t = super::timeline(&trace).unwrap();
        assert_eq!(
            t.phases,
            vec![
                phase("event", 30.0, 17.0, 2),
                phase("reschedule_all", 5.0, 0.0, 0)
            ]
        );
        assert_eq!(t.threads, 2);
        assert_eq!(t.between(2), 5.0);
    }

    #[test]
    fn a_trace_without_a_whole_phase_is_refused() {
        // Cut at the record limit (3 zones closed, 2 recorded) before the worker's records of
        // the first phase were handed over.
        let json = r#"{"traceEvents":[
            {"name":"event","ph":"X","pid":1,"tid":1,"ts":0.0,"dur":30.0},
            {"name":"force_task","ph":"X","pid":1,"tid":2,"ts":5.0,"dur":9.0}
        ],"otherData":{"zone_totals":{"event":{"count":2},"force_task":{"count":1}}}}"#;
        let trace: TraceFile<'_> = serde_json::from_str(json).unwrap();
        let e = super::timeline(&trace).unwrap_err();
        assert!(e.contains("no whole phase"), "{e}");
        let only_tasks = r#"{"traceEvents":[
            {"name":"force_task","ph":"X","pid":1,"tid":1,"ts":0.0,"dur":9.0}
        ]}"#;
        let trace: TraceFile<'_> = serde_json::from_str(only_tasks).unwrap();
        let e = super::timeline(&trace).unwrap_err();
        assert!(e.contains("no zones outside tasks"), "{e}");
    }
}
