//! Contact kernels: slab failure time, closest points, one penalty-layer tick, and the exact
//! intersection audit of a 100 x 100 sheet folded over itself.

use crate::check::audit_frame;
use crate::kds::slab::{build_slab, failure_time};
use crate::mesh::sheet;
use crate::penalty::closest::{edge_edge, vertex_triangle};
use crate::penalty::impulse::{vertex_triangle_impulse, PairHistory, PenaltyParams};
use criterion::{black_box, Criterion, Throughput};
use glam::DVec3;

/// 1024 random VT configurations (positions and velocities), seeded.
fn cases() -> Vec<([DVec3; 4], [DVec3; 4])> {
    let mut seed = 12345u64;
    let mut rnd = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    (0..1024)
        .map(|_| {
            let mut x = [DVec3::ZERO; 4];
            let mut v = [DVec3::ZERO; 4];
            x[0] = DVec3::new(rnd(), 1.0 + rnd().abs(), rnd());
            for xk in &mut x[1..] {
                *xk = DVec3::new(2.0 * rnd(), 0.1 * rnd(), 2.0 * rnd());
            }
            for vk in &mut v {
                *vk = DVec3::new(rnd(), rnd(), rnd());
            }
            (x, v)
        })
        .collect()
}

fn kernels(c: &mut Criterion) {
    let cases = cases();
    let slabs: Vec<_> = cases
        .iter()
        .filter_map(|(x, v)| build_slab(x, v, 1, 0.1).map(|s| (s, *x, *v)))
        .collect();
    let mut group = c.benchmark_group("contact");
    group.sample_size(20);
    group.measurement_time(std::time::Duration::from_secs(2));
    group.throughput(Throughput::Elements(slabs.len() as u64));
    group.bench_function("slab_failure_time", |b| {
        b.iter(|| {
            slabs
                .iter()
                .map(|(s, x, v)| failure_time(s, x, v, 1))
                .fold(0.0, f64::max)
        })
    });
    group.throughput(Throughput::Elements(cases.len() as u64));
    group.bench_function("closest_vertex_triangle", |b| {
        b.iter(|| {
            cases
                .iter()
                .map(|(x, _)| vertex_triangle(x[0], x[1], x[2], x[3]).distance)
                .sum::<f64>()
        })
    });
    group.bench_function("closest_edge_edge", |b| {
        b.iter(|| {
            cases
                .iter()
                .map(|(x, _)| edge_edge(x[0], x[1], x[2], x[3]).distance)
                .sum::<f64>()
        })
    });
    let params = PenaltyParams {
        eta: 2.0,
        r: 1000.0,
        h: 1e-4,
        cor: 0.5,
        mu: 0.3,
        friction_cap: false,
        stack: None,
        kick: 0.0,
    };
    group.bench_function("penalty_impulse_vt", |b| {
        b.iter(|| {
            cases
                .iter()
                .map(|(x, v)| {
                    let history = PairHistory::default();
                    vertex_triangle_impulse(*x, *v, [1.0; 4], &history, black_box(&params)).impulses
                        [0]
                    .y
                })
                .sum::<f64>()
        })
    });
    group.finish();
}

fn audit(c: &mut Criterion) {
    // Two 100 x 100 sheets 0.004 cm apart: the folded-sheet worst case for the audit.
    let lower = sheet(100, 100, 1.0, 1.0).unwrap();
    let mut positions = lower.positions.clone();
    let mut triangles = lower.triangles.clone();
    let offset = positions.len() as u32;
    positions.extend(
        lower
            .positions
            .iter()
            .map(|p| *p + DVec3::new(0.0, 0.004, 0.0)),
    );
    triangles.extend(lower.triangles.iter().map(|t| t.map(|v| v + offset)));
    let mut group = c.benchmark_group("audit");
    group.sample_size(10);
    group.throughput(Throughput::Elements(triangles.len() as u64));
    group.bench_function("two_sheets_100x100", |b| {
        b.iter(|| {
            audit_frame(&positions, &triangles, 0.01, 0)
                .unwrap()
                .intersecting_pairs
        })
    });
    group.finish();
}

/// Every benchmark of this file, in order (what `cargo bench --features bench-kernels --bench contact` runs).
pub fn all(criterion: &mut Criterion) {
    kernels(criterion);
    audit(criterion);
}
