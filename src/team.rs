//! The thread pool's workers held as a team for the length of a run: each polls for work
//! instead of sleeping, and a job cut into one part a thread runs part `k` on member `k`, the
//! same thread every time.
//!
//! The event loop forks many small parallel phases (a super-element tick, a whole-mesh re-time,
//! a separation-list pass), each some tens of microseconds long and about as far apart. Rayon
//! puts an idle worker to sleep after a few rounds without work, and waking it again costs
//! about as much as such a phase (15-20 us measured on a 2-core virtual machine). While a
//! [`Team`] lives, every other worker of the current pool runs a loop that takes pending rayon
//! work as soon as it appears, and also runs the parts of the jobs that the loop's thread
//! hands out with [`run_parts`]. A rayon fork lets any worker steal any piece, so the vertex
//! state a piece touches lands on a different core from one event to the next; a part of
//! [`run_parts`] runs on its member every time, so the data it owns stays in that core's cache,
//! and handing it out costs one store and one load of a shared counter instead of a steal.
//!
//! Polling keeps a core busy per worker. It is done only under [`WaitPolicy::Active`] and when
//! the pool and the loop's thread fit in the machine's cores; a worker idle for longer than
//! [`SPIN_ROUNDS`] looks also yields its core to the operating system between looks, so that
//! other programs (or other pools) on the machine still run. Without a team, [`run_parts`]
//! runs the parts as rayon tasks: the same results, since a part's work does not depend on
//! the thread that runs it.

use std::cell::{Cell, UnsafeCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use rayon::prelude::*;

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

/// A part of a job, as the members see it: `'static` only in name, since the leader waits in
/// [`run_parts`] until every member has finished its part.
type Part = *const (dyn Fn(usize) + Sync + 'static);

/// What the leader and the members share.
struct Shared {
    /// Set when the team ends: the members return.
    stop: AtomicBool,
    /// How many jobs the leader has handed out; a member runs a job when this moves past the
    /// last one it ran.
    generation: AtomicUsize,
    /// The current job, written by the leader before it moves `generation` on (release) and
    /// read by a member after it sees the new value (acquire).
    job: UnsafeCell<Option<Part>>,
    /// Members still running their part of the current job.
    remaining: AtomicUsize,
    /// Whether a member's part panicked.
    panicked: AtomicBool,
}

// SAFETY: `job` is written only by the leader, and only while no member reads it: between the
// end of one job (every member has decremented `remaining`, acquire) and the start of the next
// (`generation`, release); the pointer it holds is only called while the leader waits.
unsafe impl Sync for Shared {}
// SAFETY: as for `Sync`; the raw pointer is the only field that is not `Send` by itself.
unsafe impl Send for Shared {}

thread_local! {
    /// The team whose leader is this thread, if any.
    static LED: Cell<*const Shared> = const { Cell::new(std::ptr::null()) };
}

/// While alive, the current pool's other workers poll for work instead of sleeping and serve
/// [`run_parts`] called from this thread, the team's leader (member 0).
#[derive(Debug)]
pub(crate) struct Team {
    shared: Option<Arc<Shared>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

impl Team {
    /// Starts the polling loops on every worker of the current pool but this thread, under
    /// [`WaitPolicy::Active`] when the pool has two threads or more and they and this thread
    /// together need no more than the machine's cores (so a loop run from outside the pool, on
    /// a pool of all the cores, does not spin: run it inside with `ThreadPool::install`).
    /// Members are numbered by pool index, the leader first. Without polling there is no team
    /// and [`run_parts`] falls back to rayon tasks.
    pub(crate) fn start(policy: WaitPolicy) -> Self {
        let threads = rayon::current_num_threads();
        let here = rayon::current_thread_index();
        // The loop's own thread needs a core too; called from outside the pool, it is one more.
        let busy = threads + usize::from(here.is_none());
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        if policy == WaitPolicy::Passive || threads < 2 || busy > cores {
            return Self { shared: None };
        }
        Self::form(here)
    }

    /// The team of the current pool's threads, led by this thread (pool index `here`; `None`:
    /// outside the pool, where the workers poll but [`run_parts`] uses rayon). No team if this
    /// thread already leads one.
    fn form(here: Option<usize>) -> Self {
        if !LED.with(Cell::get).is_null() {
            return Self { shared: None };
        }
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            generation: AtomicUsize::new(0),
            job: UnsafeCell::new(None),
            remaining: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
        });
        let members = Arc::clone(&shared);
        rayon::spawn_broadcast(move |worker| {
            let i = worker.index();
            if Some(i) != here {
                // The leader is member 0; the others keep their pool order.
                let member = match here {
                    Some(h) if i > h => i,
                    _ => i + 1,
                };
                serve(&members, member);
            }
        });
        if here.is_some() {
            LED.with(|led| led.set(Arc::as_ptr(&shared)));
        }
        Self {
            shared: Some(shared),
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared {
            LED.with(|led| {
                if led.get() == Arc::as_ptr(shared) {
                    led.set(std::ptr::null());
                }
            });
            shared.stop.store(true, Ordering::Release);
        }
    }
}

/// A member's loop: run the leader's jobs and the pool's pending work as they appear until
/// the team stops.
fn serve(shared: &Shared, member: usize) {
    let mut ran = 0;
    let mut idle = 0u32;
    while !shared.stop.load(Ordering::Acquire) {
        let generation = shared.generation.load(Ordering::Acquire);
        if generation != ran {
            ran = generation;
            // SAFETY: the leader wrote the job before moving `generation` on (acquired above)
            // and keeps it alive until this member decrements `remaining`.
            let part = unsafe { (*shared.job.get()).expect("a job is handed out with its part") };
            // SAFETY: as above.
            let done = panic::catch_unwind(AssertUnwindSafe(|| unsafe { (*part)(member) }));
            if done.is_err() {
                shared.panicked.store(true, Ordering::Relaxed);
            }
            shared.remaining.fetch_sub(1, Ordering::AcqRel);
            idle = 0;
            continue;
        }
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

/// How many parts [`run_parts`] runs one a thread: the current pool's threads.
fn parts() -> usize {
    rayon::current_num_threads()
}

/// Calls `part(k)` once for every `k` in `0..parts`, in parallel, and returns when all have
/// returned. Called by a team's leader with at most [`parts()`] parts, part `k` runs on member
/// `k`, the same thread at every call; otherwise the parts run as rayon tasks. A part must not
/// depend on the thread it runs on (results are the same either way). A part that panics is
/// re-raised here after the others finish.
pub(crate) fn run_parts(parts: usize, part: impl Fn(usize) + Sync) {
    if parts == 1 {
        return part(0);
    }
    let led = LED.with(Cell::get);
    if led.is_null() || parts > rayon::current_num_threads() {
        (0..parts).into_par_iter().with_max_len(1).for_each(&part);
        return;
    }
    // SAFETY: `LED` points at a team's shared state only while that team lives (its `Drop`
    // clears it), and this thread holds the team.
    let shared = unsafe { &*led };
    let members = rayon::current_num_threads();
    let each = |k: usize| {
        if k < parts {
            part(k);
        }
    };
    let each: &(dyn Fn(usize) + Sync) = &each;
    // SAFETY: the lifetime is erased for the members, who call it only before they decrement
    // `remaining`; this function does not return (or unwind) before `remaining` is zero.
    let erased: Part = unsafe { std::mem::transmute::<*const _, Part>(each as *const _) };
    // SAFETY: no member reads `job` now: every member finished the last job (`remaining` was
    // zero, acquired) and none starts the next before `generation` moves on below.
    unsafe { *shared.job.get() = Some(erased) };
    shared.remaining.store(members - 1, Ordering::Relaxed);
    shared.generation.fetch_add(1, Ordering::Release);
    let own = panic::catch_unwind(AssertUnwindSafe(|| each(0)));
    let mut spins = 0u32;
    while shared.remaining.load(Ordering::Acquire) != 0 {
        spins = spins.saturating_add(1);
        if spins > SPIN_ROUNDS * IDLE_SPINS {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
    if let Err(payload) = own {
        panic::resume_unwind(payload);
    }
    if shared.panicked.swap(false, Ordering::Relaxed) {
        panic!("a part of a team's job panicked on another thread");
    }
}

/// [`run_parts`] with one part an item of `items`, each part with its item to itself; returns
/// the parts' results in item order.
pub(crate) fn map_parts<T: Send, R: Send>(
    items: &mut [T],
    part: impl Fn(&mut T) -> R + Sync,
) -> Vec<R> {
    let mut results: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    let (items_at, results_at) = (Disjoint(items.as_mut_ptr()), Disjoint(results.as_mut_ptr()));
    run_parts(items.len(), |k| {
        // SAFETY: `run_parts` calls each `k` in `0..items.len()` once, so no two parts touch
        // the same item or result, and both vectors outlive the call.
        let (item, result) = unsafe { (&mut *items_at.at(k), &mut *results_at.at(k)) };
        *result = Some(part(item));
    });
    let ran = results.into_iter().map(|r| r.expect("every part ran"));
    ran.collect()
}

/// How many blocks of at least `min_block` items to cut `len` items into for [`run_parts`] (as
/// [`map_into`] does): one a thread at most, and one for fewer than twice `min_block`.
pub(crate) fn blocks(len: usize, min_block: usize) -> usize {
    (len / min_block.max(1)).clamp(1, parts())
}

/// Replaces `out` with `map(&items[i])` for every `i`, the items cut into [`blocks`] contiguous
/// blocks, block `k` on member `k` ([`run_parts`]; a single block runs inline). `init` runs
/// once a block, before its items, and what it returns lives until the block ends (a profiling
/// zone), as in rayon's `map_init`. The results do not depend on the cut.
pub(crate) fn map_into<T: Sync, R: Send, Z>(
    items: &[T],
    out: &mut Vec<R>,
    min_block: usize,
    init: impl Fn() -> Z + Sync,
    map: impl Fn(&T) -> R + Sync,
) {
    out.clear();
    let n = items.len();
    let blocks = blocks(n, min_block);
    if blocks == 1 {
        let _init = init();
        out.extend(items.iter().map(map));
        return;
    }
    out.reserve(n);
    let mut pieces = Vec::with_capacity(blocks);
    let (mut items_left, mut slots_left) = (items, &mut out.spare_capacity_mut()[..n]);
    for k in 0..blocks {
        let len = (k + 1) * n / blocks - k * n / blocks;
        let (block, after) = items_left.split_at(len);
        let (slots, slots_after) = std::mem::take(&mut slots_left).split_at_mut(len);
        pieces.push((block, slots));
        (items_left, slots_left) = (after, slots_after);
    }
    map_parts(&mut pieces, |(block, slots)| {
        let _init = init();
        for (item, slot) in block.iter().zip(slots.iter_mut()) {
            slot.write(map(item));
        }
    });
    // SAFETY: `map_parts` returned, so every part ran to its end (a panic is re-raised there,
    // leaving `out` empty) and wrote each of the first `n` slots.
    unsafe { out.set_len(n) };
}

/// The start of a slice whose elements different parts use, each its own.
struct Disjoint<T>(*mut T);

// SAFETY: parts on different threads reach different elements (see `map_parts`); an element
// is `Send`, so it may be used from the thread a part runs on.
unsafe impl<T: Send> Sync for Disjoint<T> {}

impl<T> Disjoint<T> {
    /// Element `k` (a method, so that closures capture the whole `Disjoint`, which is `Sync`).
    fn at(&self, k: usize) -> *mut T {
        // SAFETY: callers pass an index inside the slice this was taken from.
        unsafe { self.0.add(k) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a test pool")
    }

    /// The pool index of the thread that ran each part of each of `jobs` jobs, on a pool of
    /// `threads` led by a team or not.
    fn threads_of_parts(threads: usize, team: bool, jobs: usize) -> Vec<Vec<usize>> {
        pool(threads).install(|| {
            let _team = team.then(|| Team::form(rayon::current_thread_index()));
            (0..jobs)
                .map(|_| {
                    let ran = Mutex::new(vec![None; threads]);
                    run_parts(threads, |k| {
                        // Long enough that every thread also takes parts without a team.
                        std::thread::sleep(std::time::Duration::from_micros(300));
                        ran.lock().unwrap()[k] = rayon::current_thread_index();
                    });
                    let ran = ran.into_inner().unwrap();
                    ran.into_iter()
                        .map(|i| i.expect("a part ran in the pool"))
                        .collect()
                })
                .collect()
        })
    }

    #[test]
    fn a_team_runs_each_part_on_its_own_thread_at_every_call() {
        // Formed directly: more threads than this machine may have cores still make a team.
        let led = threads_of_parts(4, true, 40);
        let leader = led[0][0];
        let expected: Vec<usize> = std::iter::once(leader)
            .chain((0..4).filter(|&i| i != leader))
            .collect();
        assert!(led.iter().all(|job| *job == expected), "{led:?}");
        // Rayon tasks run every part too, each on whichever thread takes it.
        let loose = threads_of_parts(4, false, 5);
        assert!(loose.iter().all(|job| job.len() == 4));
    }

    #[test]
    fn a_part_that_panics_on_either_thread_is_reraised_after_the_others_finish() {
        for panicking in [0, 1] {
            let finished = AtomicUsize::new(0);
            let outcome = pool(2).install(|| {
                let _team = Team::start(WaitPolicy::Active);
                panic::catch_unwind(AssertUnwindSafe(|| {
                    run_parts(parts(), |k| {
                        if k == panicking {
                            panic!("part {k} fails");
                        }
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        finished.fetch_add(1, Ordering::SeqCst);
                    })
                }))
            });
            assert!(outcome.is_err(), "part {panicking}'s panic was lost");
            assert_eq!(finished.load(Ordering::SeqCst), 1);
        }
    }

    #[test]
    fn map_into_maps_every_item_in_order_with_one_init_a_block() {
        for threads in [1, 2, 3] {
            pool(threads).install(|| {
                let _team = Team::start(WaitPolicy::Active);
                let mut out = vec![7u64; 3];
                for n in [0, 1, 9, 10, 11, 100, 1001] {
                    let items: Vec<u64> = (0..n).map(|i| i * 31 % 17).collect();
                    let inits = AtomicUsize::new(0);
                    let init = || inits.fetch_add(1, Ordering::SeqCst);
                    map_into(&items, &mut out, 5, init, |&x| x * x + 1);
                    let expected: Vec<u64> = items.iter().map(|&x| x * x + 1).collect();
                    assert_eq!(out, expected, "{n} items on {threads} threads");
                    let blocks = (n as usize / 5).clamp(1, threads);
                    assert_eq!(inits.into_inner(), blocks, "{n} items on {threads} threads");
                }
            });
        }
    }

    #[test]
    fn map_into_leaves_nothing_behind_when_a_block_panics() {
        let mut out = vec![String::from("before")];
        let outcome = pool(2).install(|| {
            let _team = Team::start(WaitPolicy::Active);
            let items: Vec<u32> = (0..100).collect();
            panic::catch_unwind(AssertUnwindSafe(|| {
                map_into(
                    &items,
                    &mut out,
                    10,
                    || (),
                    |&i| {
                        assert!(i != 70, "item {i} fails");
                        i.to_string()
                    },
                )
            }))
        });
        assert!(outcome.is_err());
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn a_team_ends_with_its_guard_and_the_next_one_serves_again() {
        let sums: Vec<usize> = pool(2).install(|| {
            (0..3)
                .map(|_| {
                    let _team = Team::start(WaitPolicy::Active);
                    let total = AtomicUsize::new(0);
                    for _ in 0..100 {
                        run_parts(parts(), |k| {
                            total.fetch_add(k + 1, Ordering::SeqCst);
                        });
                    }
                    total.into_inner()
                })
                .collect()
        });
        assert_eq!(sums, vec![300; 3]);
    }
}
