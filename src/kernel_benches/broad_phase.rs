//! Broad-phase kernels (issue 4): the overlap interval of two moving volumes (AABB, 18-DOP,
//! 26-DOP, sphere), a full bottom-up refit of the hierarchy over a 100 x 100 sheet, and the
//! near feature pairs of neighbouring groups of leaves on it, screened and tested whole.

use crate::kds::bvh::Bvh;
use crate::kds::kdop::{Aabb, AxisHint, Dop18, Dop26, Sphere, Volume};
use crate::kds::leaves::{LeafId, Leaves, References};
use crate::mesh::{sheet, Topology};
use crate::state::{VertexKind, VertexState};
use criterion::{black_box, Criterion, Throughput};
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

/// The leaves of a 100 x 100 sheet (80 cm square, rippled by up to `ripple` cm) whose vertices
/// fall at seven speeds, and its vertex state.
fn falling_sheet(ripple: f64) -> (Leaves, VertexState) {
    let mesh = sheet(100, 100, 80.0, 80.0).unwrap();
    let topology = Topology::build(&mesh).unwrap();
    let n = mesh.positions.len();
    let rippled = |p: DVec3| p + DVec3::Y * ripple * (0.3 * p.x).sin() * (0.2 * p.z).cos();
    let state = VertexState {
        x: mesh.positions.iter().map(|&p| rippled(p)).collect(),
        t: vec![0.0; n],
        v: (0..n)
            .map(|i| DVec3::new(0.0, -((i % 7) as f64), 0.1))
            .collect(),
        mass: vec![1.0; n],
        inv_mass: vec![1.0; n],
        kind: vec![VertexKind::Free; n],
    };
    let leaves = Leaves::new(topology.edges.clone(), mesh.triangles.clone(), n);
    (leaves, state)
}

fn refit<V: Volume>(c: &mut Criterion, name: &str) {
    let (leaves, state) = falling_sheet(0.0);
    let n = state.len();
    let mut bvh = Bvh::<V>::over(&leaves, &state, 0.0);
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

/// The near feature pairs of groups of four consecutive leaves (neighbours on the sheet) against
/// the next group and the group a row further, with the refit's pad (a `0.1` cm first layer):
/// screened
/// on two axes per group pair (`References::near_group_features`, what the separation list runs)
/// and with a whole test of every feature pair; both find the same pairs.
fn near_features(c: &mut Criterion) {
    let (leaves, state) = falling_sheet(1.0);
    let mut refs = References::new(state.len());
    refs.reset_all(&state, 0.01);
    let groups: Vec<Vec<LeafId>> = (0..leaves.len() as u32 / 4)
        .map(|k| (4 * k..4 * k + 4).map(LeafId::new).collect())
        .collect();
    let pairs: Vec<(&[LeafId], &[LeafId])> = (0..groups.len())
        .flat_map(|k| [k + 1, k + 50].map(|m| (k, m)))
        .filter(|&(_, m)| m < groups.len())
        .map(|(k, m)| (&groups[k][..], &groups[m][..]))
        .collect();
    let hints = [AxisHint::new(true), AxisHint::new(true)];
    let hints = [&hints[0], &hints[1]];
    let (pad, span) = (0.075, (0.0, 0.01));
    let screened = || {
        let mut found = 0usize;
        for &(a, b) in &pairs {
            let each = |_| true;
            refs.near_group_features::<Dop18>(
                &leaves,
                (a, Some(b)),
                pad,
                span,
                hints,
                each,
                &mut |_| found += 1,
            );
        }
        found
    };
    let whole = || {
        let mut found = 0usize;
        for &(a, b) in &pairs {
            leaves.group_features(a, Some(b), &mut |k| {
                found += usize::from(refs.near::<Dop18>(&leaves, k, pad, span, hints));
            });
        }
        found
    };
    assert_eq!(screened(), whole(), "the screen changed the pairs found");
    let mut group = c.benchmark_group("broad_phase");
    group.sample_size(20);
    group.measurement_time(std::time::Duration::from_secs(2));
    group.throughput(Throughput::Elements(pairs.len() as u64));
    group.bench_function("near_features_screened_kdop18", |b| {
        b.iter(|| black_box(screened()))
    });
    group.bench_function("near_features_whole_kdop18", |b| {
        b.iter(|| black_box(whole()))
    });
    group.finish();
}

/// Every benchmark of this file, in order (what `cargo bench --features bench-kernels --bench broad_phase` runs).
pub fn all(criterion: &mut Criterion) {
    overlaps(criterion);
    refits(criterion);
    near_features(criterion);
}
