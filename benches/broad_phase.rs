//! Broad-phase kernels (issue 4): the overlap interval of two moving volumes (AABB, 18-DOP,
//! 26-DOP, sphere) and a full bottom-up refit of the hierarchy over a 100 x 100 sheet.

use acm::kds::bvh::Bvh;
use acm::kds::kdop::{Aabb, Dop18, Dop26, Sphere, Volume};
use acm::kds::leaves::{Leaves, References};
use acm::mesh::{sheet, Topology};
use acm::state::{VertexKind, VertexState};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use glam::DVec3;

/// 1024 pairs of volumes around random moving triangles, seeded, on the horizon `[0, 1]`.
fn pairs<V: Volume>() -> Vec<(V, V)> {
    let mut seed = 2024u64;
    let mut rnd = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let mut triangle = |offset: f64| {
        let v = DVec3::new(rnd(), rnd(), rnd());
        let p0: Vec<DVec3> = (0..3)
            .map(|_| DVec3::new(offset + rnd(), rnd(), rnd()))
            .collect();
        let p1: Vec<DVec3> = p0.iter().map(|p| *p + v).collect();
        V::fit(&p0, &p1, 0.0, 1.0, 0.05)
    };
    (0..1024).map(|_| (triangle(0.0), triangle(2.0))).collect()
}

fn overlap<V: Volume>(c: &mut Criterion, name: &str) {
    let pairs = pairs::<V>();
    let mut group = c.benchmark_group("broad_phase");
    group.sample_size(20);
    group.measurement_time(std::time::Duration::from_secs(2));
    group.throughput(Throughput::Elements(pairs.len() as u64));
    group.bench_function(format!("overlap_interval_{name}"), |b| {
        b.iter(|| {
            pairs
                .iter()
                .filter(|(a, b)| black_box(a).overlap_interval(b, 0.25, 1.0).is_some())
                .count()
        })
    });
    group.finish();
}

fn overlaps(c: &mut Criterion) {
    overlap::<Aabb>(c, "aabb");
    overlap::<Dop18>(c, "kdop18");
    overlap::<Dop26>(c, "kdop26");
    overlap::<Sphere>(c, "sphere");
}

fn refit<V: Volume>(c: &mut Criterion, name: &str) {
    let mesh = sheet(100, 100, 80.0, 80.0).unwrap();
    let topology = Topology::build(&mesh).unwrap();
    let n = mesh.positions.len();
    let state = VertexState {
        x: mesh.positions.clone(),
        t: vec![0.0; n],
        v: (0..n)
            .map(|i| DVec3::new(0.0, -((i % 7) as f64), 0.1))
            .collect(),
        mass: vec![1.0; n],
        inv_mass: vec![1.0; n],
        kind: vec![VertexKind::Free; n],
    };
    let leaves = Leaves::new(topology.edges.clone(), mesh.triangles.clone(), n);
    let centroids: Vec<DVec3> = (0..leaves.len() as u32)
        .map(|l| leaves.centroid(l, &state, 0.0))
        .collect();
    let placeholder = V::fit(&[DVec3::ZERO], &[DVec3::ZERO], 0.0, 0.0, 0.0);
    let mut bvh = Bvh::build(&centroids, |a, b| leaves.adjacent(a, b), placeholder);
    let mut refs = References::new(n);
    refs.reset_all(&state, 0.01);
    let mut group = c.benchmark_group("broad_phase");
    group.sample_size(20);
    group.measurement_time(std::time::Duration::from_secs(2));
    group.throughput(Throughput::Elements(bvh.len() as u64));
    group.bench_function(format!("refit_all_sheet_100x100_{name}"), |b| {
        b.iter(|| bvh.refit_all(&leaves, &refs, (0.0, 0.01), 0.075, 0.025))
    });
    group.finish();
}

fn refits(c: &mut Criterion) {
    refit::<Aabb>(c, "aabb");
    refit::<Dop18>(c, "kdop18");
    refit::<Dop26>(c, "kdop26");
    refit::<Sphere>(c, "sphere");
}

criterion_group!(benches, overlaps, refits);
criterion_main!(benches);
