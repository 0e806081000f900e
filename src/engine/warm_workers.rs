//! Keeps the thread pool's other workers awake while the event loop runs.
//!
//! The event loop forks many small parallel phases (a super-element tick, a whole-mesh re-time,
//! a separation-list pass), each some tens of microseconds long and about as far apart. Rayon
//! puts an idle worker to sleep after a few rounds without work, and waking it again costs
//! about as much as such a phase (15-20 us measured on a 2-core virtual machine), so two
//! threads ran the paper's smaller scenes barely faster than one. While a [`WarmWorkers`]
//! guard lives, every other worker of the current pool runs a loop that takes pending work
//! from the pool as soon as it appears, so a fork costs what the work costs.
//!
//! Waiting this way keeps a core busy per worker. It is done only under
//! [`WaitPolicy::Active`] and when the pool and the loop's thread fit in the machine's cores;
//! a worker idle for longer than [`SPIN_ROUNDS`] looks also yields its core to the operating
//! system between looks, so that other programs (or other pools) on the machine still run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How the pool's idle workers wait for the event loop's next parallel phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WaitPolicy {
    /// Poll for work (the default): the lowest latency, a busy core per worker while the loop
    /// runs.
    #[default]
    Active,
    /// Let rayon put idle workers to sleep: no busy cores, slower forks.
    Passive,
}

impl std::str::FromStr for WaitPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "active" => Ok(Self::Active),
            "passive" => Ok(Self::Passive),
            _ => Err(format!("expected active or passive, got {s:?}")),
        }
    }
}

/// Spin-loop hints between two looks for work: a look reads the other workers' queues, whose
/// cache lines the event loop's thread then has to fetch back.
const IDLE_SPINS: u32 = 64;

/// Looks without work after which an idle worker also yields its core between looks.
const SPIN_ROUNDS: u32 = 1 << 10;

/// While alive, the current pool's other workers poll for work instead of sleeping.
#[derive(Debug)]
pub(crate) struct WarmWorkers {
    stop: Option<Arc<AtomicBool>>,
}

impl WarmWorkers {
    /// Starts the polling loops on every worker of the current pool but this thread, under
    /// [`WaitPolicy::Active`] when the pool has two threads or more and they and this thread
    /// together need no more than the machine's cores (so a loop run from outside the pool, on
    /// a pool of all the cores, does not spin: run it inside with `ThreadPool::install`).
    pub(crate) fn start(policy: WaitPolicy) -> Self {
        let threads = rayon::current_num_threads();
        let here = rayon::current_thread_index();
        // The loop's own thread needs a core too; called from outside the pool, it is one more.
        let busy = threads + usize::from(here.is_none());
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        if policy == WaitPolicy::Passive || threads < 2 || busy > cores {
            return Self { stop: None };
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        rayon::spawn_broadcast(move |worker| {
            if Some(worker.index()) != here {
                poll_until(&flag);
            }
        });
        Self { stop: Some(stop) }
    }
}

/// A worker's loop: run the pool's pending work as it appears until `stop` is set.
fn poll_until(stop: &AtomicBool) {
    let mut idle = 0u32;
    while !stop.load(Ordering::Acquire) {
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            idle = 0;
            continue;
        }
        idle = idle.saturating_add(1);
        if idle > SPIN_ROUNDS {
            std::thread::yield_now();
        } else {
            for _ in 0..IDLE_SPINS {
                std::hint::spin_loop();
            }
        }
    }
}

impl Drop for WarmWorkers {
    fn drop(&mut self) {
        if let Some(stop) = &self.stop {
            stop.store(true, Ordering::Release);
        }
    }
}
