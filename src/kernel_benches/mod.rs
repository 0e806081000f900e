//! Criterion benchmarks of the crate-private kernels (feature `bench-kernels`): the event queue,
//! the element families' ticks, the contact kernels and the broad-phase volumes. They live in
//! the library so the kernels stay private; each `benches/` target of the same name runs one
//! module's [`all`](queue::all), e.g. `cargo bench --features bench-kernels --bench queue`.

pub mod broad_phase;
pub mod contact;
pub mod forces;
pub mod queue;
