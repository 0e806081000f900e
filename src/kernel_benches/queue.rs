//! Event-queue benchmarks: the simulation loop's "hold" pattern and random rescheduling, at
//! 10^4 and 10^6 queued events, for heap arities D = 2, 4 and 8.
//!
//! * `hold/D{d}/{n}`: pop the earliest event and push it back at its time plus a random
//!   increment in [0, 2). One iteration is one pop plus one push (2 operations).
//! * `update/D{d}/{n}`: move a uniformly random queued id to a new random time drawn from the
//!   same distribution as the initial times. One iteration is one update.
//!
//! Kept short (10 samples, 2 s each) because CI smoke-runs benches with `cargo test --benches`.

use crate::events::{EventId, EventQueue};
use criterion::{BenchmarkGroup, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

/// SplitMix64: a tiny deterministic generator, so the benchmark needs no extra dependency.
struct Rng(u64);

impl Rng {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    #[inline]
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// A queue holding ids `0..n` at uniform random times in [0, 1).
fn filled<const D: usize>(n: usize, rng: &mut Rng) -> EventQueue<D> {
    let mut q = EventQueue::<D>::with_capacity(n);
    for i in 0..n {
        q.push(EventId::from_usize(i), rng.next_f64());
    }
    q
}

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

fn hold<const D: usize>(g: &mut Group<'_>, n: usize) {
    let mut rng = Rng(0x5EED ^ n as u64);
    let mut q = filled::<D>(n, &mut rng);
    g.throughput(Throughput::Elements(2));
    g.bench_function(format!("D{D}/{n}"), |b| {
        b.iter(|| {
            let (id, t) = q.pop().unwrap();
            q.push(id, t + 2.0 * rng.next_f64());
            black_box(id)
        })
    });
}

fn update<const D: usize>(g: &mut Group<'_>, n: usize) {
    let mut rng = Rng(0xF00D ^ n as u64);
    let mut q = filled::<D>(n, &mut rng);
    g.throughput(Throughput::Elements(1));
    g.bench_function(format!("D{D}/{n}"), |b| {
        b.iter(|| {
            let id = EventId((rng.next_u64() % n as u64) as u32);
            q.update(id, rng.next_f64());
            black_box(id)
        })
    });
}

fn configure<'a>(c: &'a mut Criterion, name: &str) -> Group<'a> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g
}

fn bench_hold(c: &mut Criterion) {
    let mut g = configure(c, "hold");
    for n in [10_000, 1_000_000] {
        hold::<2>(&mut g, n);
        hold::<4>(&mut g, n);
        hold::<8>(&mut g, n);
    }
    g.finish();
}

fn bench_update(c: &mut Criterion) {
    let mut g = configure(c, "update");
    for n in [10_000, 1_000_000] {
        update::<2>(&mut g, n);
        update::<4>(&mut g, n);
        update::<8>(&mut g, n);
    }
    g.finish();
}

/// Every benchmark of this file, in order (what `cargo bench --features bench-kernels --bench queue` runs).
pub fn all(criterion: &mut Criterion) {
    bench_hold(criterion);
    bench_update(criterion);
}
