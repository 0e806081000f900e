//! Broad-phase kernels (issue 4): the overlap interval of two moving volumes (AABB, 18-DOP,
//!
//! The benchmarks measure crate-private kernels, so they live in the library
//! (`src/kernel_benches/broad_phase.rs`, feature `bench-kernels`):
//! `cargo bench --features bench-kernels --bench broad_phase`.

use criterion::{criterion_group, criterion_main};

criterion_group!(benches, acm::kernel_benches::broad_phase::all);
criterion_main!(benches);
