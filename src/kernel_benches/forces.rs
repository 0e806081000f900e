//! One super-element tick of stretching and of bending on square sheets.
//!
//! Reports element updates per second (criterion's throughput), on one thread and on two, for
//! both ways a bin is ticked (`ElementFamily::tick_chunks`, `ElementFamily::tick_owned`).

use crate::forces::{
    ElementFamily, ElementKernel, HingeFamily, HingeKernel, SpringFamily, SpringKernel,
};
use crate::mesh::{lumped_masses, sheet, Topology};
use crate::state::{VertexKind, VertexState};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use glam::DVec3;

struct Model {
    state: VertexState,
    springs: SpringFamily,
    hinges: HingeFamily,
}

fn model(n: usize) -> Model {
    let mut mesh = sheet(n, n, 100.0, 100.0).unwrap();
    // A gentle wave so that every hinge is bent and every spring stretched.
    for p in &mut mesh.positions {
        p.y = 0.5 * (0.3 * p.x).sin() * (0.2 * p.z).cos();
    }
    let topology = Topology::build(&mesh).unwrap();
    let mass = lumped_masses(&mesh, 0.001);
    let state = VertexState {
        x: mesh.positions.clone(),
        t: vec![0.0; mass.len()],
        v: vec![DVec3::ZERO; mass.len()],
        inv_mass: mass.iter().map(|m| 1.0 / m).collect(),
        mass,
        kind: vec![VertexKind::Free; mesh.positions.len()],
    };
    let rest = sheet(n, n, 100.0, 100.0).unwrap().positions;
    let mut sk = SpringKernel::default();
    for &[a, b] in &topology.edges {
        sk.push(a, b, &rest, 1000.0, 1.0);
    }
    let mut hk = HingeKernel::default();
    for &h in &topology.hinges {
        hk.push(h, &rest, 0.1, 0.01);
    }
    let sc = vec![1e-4; sk.ends.len()];
    let hc = vec![1e-4; hk.verts.len()];
    // Binned (one bin, as every clock is the same): the elements in the order a scene's are.
    let springs = SpringFamily::new(sk, &sc, &state.x, state.len(), true);
    let hinges = HingeFamily::new(hk, &hc, &state.x, state.len(), true);
    Model {
        state,
        springs,
        hinges,
    }
}

fn super_element_tick(c: &mut Criterion) {
    let mut group = c.benchmark_group("super_element_tick");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(3));
    for n in [100, 316, 1000] {
        let mut m = model(n);
        for threads in [1, 2] {
            let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build() else {
                continue;
            };
            // Chunk by chunk, each chunk's impulses and kicks split among the threads, against
            // owner-computes, each thread ticking its own vertices' elements.
            for owned in [false, true] {
                let name = if owned { "owned" } else { "chunks" };
                let id = |kind: &str| BenchmarkId::new(format!("{kind}/{name}/{threads}t"), n * n);
                let way = Way {
                    pool: &pool,
                    threads,
                    owned,
                };
                way.bench(&mut group, id("stretching"), &mut m.springs, &mut m.state);
                way.bench(&mut group, id("bending"), &mut m.hinges, &mut m.state);
            }
        }
    }
    group.finish();
}

/// How a bin is ticked in a benchmark: on which pool, and owner-computes or chunk by chunk.
struct Way<'a> {
    pool: &'a rayon::ThreadPool,
    threads: usize,
    owned: bool,
}

impl Way<'_> {
    /// Benchmarks one tick of `family`'s first bin, as `id`, in elements per second.
    fn bench<const N: usize, K: ElementKernel<N> + Send>(
        &self,
        group: &mut BenchmarkGroup<'_, WallTime>,
        id: BenchmarkId,
        family: &mut ElementFamily<N, K>,
        state: &mut VertexState,
    ) {
        group.throughput(Throughput::Elements(family.len() as u64));
        group.bench_function(id, |b| {
            self.pool.install(|| {
                b.iter(|| match self.owned {
                    true => family.tick_owned(0, self.threads, 0.0, 1e-4, state),
                    false => family.tick_chunks(0, 0.0, 1e-4, state),
                })
            })
        });
    }
}

/// Every benchmark of this file, in order (what `cargo bench --features bench-kernels --bench forces` runs).
pub fn all(criterion: &mut Criterion) {
    super_element_tick(criterion);
}
