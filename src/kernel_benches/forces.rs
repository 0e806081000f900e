//! One super-element tick of stretching and of bending on square sheets and on a closed shell.
//!
//! Reports element updates per second (criterion's throughput), on one thread and on two, for
//! both ways a bin is ticked (`ElementFamily::tick_chunks`, `ElementFamily::tick_owned`).

use crate::forces::{
    ElementFamily, ElementKernel, HingeFamily, HingeKernel, SpringFamily, SpringKernel,
};
use crate::mesh::{lumped_masses, lumpy_sphere, sheet, Topology, TriMesh};
use crate::state::{VertexKind, VertexState};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use glam::DVec3;

struct Model {
    state: VertexState,
    springs: SpringFamily,
    hinges: HingeFamily,
}

/// The meshes ticked.
#[derive(Clone, Copy)]
enum Shape {
    /// [`sheet_model`] of `n` by `n` vertices.
    Sheet(usize),
    /// [`blob_model`].
    Blob,
}

impl Shape {
    /// The benchmark's name for the mesh: its kind and vertex count.
    fn name(self) -> String {
        match self {
            Shape::Sheet(n) => format!("sheet/{}", n * n),
            Shape::Blob => "blob/1736".to_string(),
        }
    }

    /// The families and state of the mesh.
    fn model(self) -> Model {
        match self {
            Shape::Sheet(n) => sheet_model(n),
            Shape::Blob => blob_model(),
        }
    }
}

/// A square sheet of `n` by `n` vertices, waved so that every hinge is bent and every spring
/// stretched (vertices numbered row by row: a cut between two ranges crosses one row).
fn sheet_model(n: usize) -> Model {
    let rest = sheet(n, n, 100.0, 100.0).unwrap();
    let mut mesh = rest.clone();
    for p in &mut mesh.positions {
        p.y = 0.5 * (0.3 * p.x).sin() * (0.2 * p.z).cos();
    }
    model(&mesh, &rest.positions)
}

/// `bunny_compactor`'s blob (a closed shell of 1,736 vertices numbered face by face), squeezed
/// along x: a cut between two ranges crosses many of its hinges.
fn blob_model() -> Model {
    let rest = lumpy_sphere(5.0, 17, 0.15, 1).unwrap();
    let mut mesh = rest.clone();
    for p in &mut mesh.positions {
        p.x *= 0.9;
    }
    model(&mesh, &rest.positions)
}

/// Stretching and hinge families over `mesh`, at rest at `rest`, one bin each.
fn model(mesh: &TriMesh, rest: &[DVec3]) -> Model {
    let topology = Topology::build(mesh).unwrap();
    let mass = lumped_masses(mesh, 0.001);
    let state = VertexState {
        x: mesh.positions.clone(),
        t: vec![0.0; mass.len()],
        v: vec![DVec3::ZERO; mass.len()],
        inv_mass: mass.iter().map(|m| 1.0 / m).collect(),
        mass,
        kind: vec![VertexKind::Free; mesh.positions.len()],
    };
    let mut sk = SpringKernel::default();
    for &[a, b] in &topology.edges {
        sk.push(a, b, rest, 1000.0, 1.0);
    }
    let mut hk = HingeKernel::default();
    for &h in &topology.hinges {
        hk.push(h, rest, 0.1, 0.01);
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
    let shapes = [
        Shape::Sheet(100),
        Shape::Sheet(316),
        Shape::Sheet(1000),
        Shape::Blob,
    ];
    for shape in shapes {
        let (name, mut m) = (shape.name(), shape.model());
        for threads in [1, 2] {
            let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build() else {
                continue;
            };
            // Chunk by chunk, each chunk's impulses and kicks split among the threads, against
            // owner-computes, each thread ticking its own vertices' elements.
            for owned in [false, true] {
                let way = if owned { "owned" } else { "chunks" };
                let id = |kind: &str| BenchmarkId::new(format!("{kind}/{way}/{threads}t"), &name);
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
