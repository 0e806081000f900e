//! Event-queue benchmarks: the simulation loop's "hold" pattern and random rescheduling, at
//!
//! The benchmarks measure crate-private kernels, so they live in the library
//! (`src/kernel_benches/queue.rs`, feature `bench-kernels`):
//! `cargo bench --features bench-kernels --bench queue`.

use criterion::{criterion_group, criterion_main};

criterion_group!(benches, acm::kernel_benches::queue::all);
criterion_main!(benches);
