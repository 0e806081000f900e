//! Contact kernels: slab failure time, closest points, one penalty-layer tick, and the exact
//!
//! The benchmarks measure crate-private kernels, so they live in the library
//! (`src/kernel_benches/contact.rs`, feature `bench-kernels`):
//! `cargo bench --features bench-kernels --bench contact`.

use criterion::{criterion_group, criterion_main};

criterion_group!(benches, acm::kernel_benches::contact::all);
criterion_main!(benches);
