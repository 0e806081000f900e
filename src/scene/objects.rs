//! What a scene is made of: objects and their material, vertex sets, forces and scripts.

use glam::DVec3;

use crate::mesh::TriMesh;

/// Elastic material of an object (cgs units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material {
    /// Area density (g/cm^2); lumped masses are `density * area / 3` per incident triangle.
    pub density: f64,
    /// Edge-spring stiffness `k_s` (dyn): `V = 0.5 k_s (|e| - L)^2 / L`.
    pub stretch: f64,
    /// Edge-spring damping coefficient (g cm/s), position based.
    pub stretch_damping: f64,
    /// Discrete-shell bending stiffness `k_b` (erg): `V = k_b (theta - theta0)^2 |e0| / h0`.
    pub bend: f64,
    /// Bending damping coefficient (erg s), position based.
    pub bend_damping: f64,
    /// Air drag rate (1/s): a force `-drag * m * v` on every vertex. Unlike the elastic damping
    /// it removes momentum; it lets swinging motion settle.
    pub drag: f64,
}

impl Material {
    /// The material of fixed obstacles and point particles: unit density, no elastic forces.
    pub(crate) const INERT: Self = Self {
        density: 1.0,
        stretch: 0.0,
        stretch_damping: 0.0,
        bend: 0.0,
        bend_damping: 0.0,
        drag: 0.0,
    };
}

impl Default for Material {
    fn default() -> Self {
        Self {
            density: 0.001,
            stretch: 1000.0,
            stretch_damping: 1.0,
            bend: 0.1,
            bend_damping: 0.0,
            drag: 0.0,
        }
    }
}

/// One object: a triangle mesh, already placed in the world.
#[derive(Clone, Debug, PartialEq)]
pub struct SceneObject {
    /// Unique name (also the `o` group in frame files).
    pub name: String,
    /// The mesh in world coordinates at time 0 (also its rest shape).
    pub mesh: TriMesh,
    /// Material.
    pub material: Material,
    /// A fixed object never moves (an obstacle): no elastic forces, zero inverse mass.
    pub fixed: bool,
    /// Initial velocity of every vertex.
    pub velocity: DVec3,
    /// A point particle of this mass (g): the mesh is a single vertex and no triangle.
    pub particle_mass: Option<f64>,
}

impl SceneObject {
    /// A point particle of mass `mass` at `position`.
    pub fn particle(name: impl Into<String>, position: DVec3, mass: f64) -> Self {
        Self {
            name: name.into(),
            mesh: TriMesh::new(vec![position], Vec::new()),
            material: Material::INERT,
            fixed: false,
            velocity: DVec3::ZERO,
            particle_mass: Some(mass),
        }
    }
}

/// A set of vertices of one object, by local vertex index.
#[derive(Clone, Debug, PartialEq)]
pub struct VertexSet {
    /// Index of the object in [`Scene::objects`](super::Scene::objects).
    pub object: usize,
    /// Local vertex indices (sorted, unique, non-empty).
    pub vertices: Vec<u32>,
}

/// A constant force on each vertex of a set during `[start, end)`.
#[derive(Clone, Debug, PartialEq)]
pub struct ForceSpec {
    /// The vertices pulled.
    pub set: VertexSet,
    /// Force per vertex (dyn).
    pub force: DVec3,
    /// Start time (s).
    pub start: f64,
    /// End time (s), possibly infinite.
    pub end: f64,
}

/// Scripted vertices: their velocity is prescribed, piecewise constant.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptSpec {
    /// The vertices moved.
    pub set: VertexSet,
    /// `(time, velocity)` keys, strictly increasing in time.
    pub keys: Vec<(f64, DVec3)>,
}
