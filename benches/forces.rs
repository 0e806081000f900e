//! One super-element tick of stretching and of bending on square sheets.
//!
//! The benchmarks measure crate-private kernels, so they live in the library
//! (`src/kernel_benches/forces.rs`, feature `bench-kernels`):
//! `cargo bench --features bench-kernels --bench forces`.

use criterion::{criterion_group, criterion_main};

criterion_group!(benches, acm::kernel_benches::forces::all);
criterion_main!(benches);
