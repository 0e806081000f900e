//! What can be wrong with a mesh, an OBJ or PLY file, or generator arguments.

/// Everything that can be wrong with a mesh, an OBJ file or generator arguments.
///
/// Each message names the offending element and says how to fix it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeshError {
    /// The mesh has no triangles.
    #[error("mesh has no triangles; a simulated surface needs at least one triangle")]
    Empty,
    /// A vertex position has a NaN or infinite coordinate.
    #[error(
        "vertex {vertex} has a non-finite coordinate (NaN or infinity); fix its position or the \
         transform that produced it"
    )]
    NonFiniteCoordinate {
        /// The vertex index.
        vertex: usize,
    },
    /// A vertex lies farther from the origin than `MAX_COORDINATE`.
    #[error(
        "vertex {vertex} is at {position}, farther than {MAX_COORDINATE:e} cm from the origin; \
         acm works in centimetres, where that is 10,000 km: scale the mesh into that range"
    )]
    CoordinateTooLarge {
        /// The vertex index.
        vertex: usize,
        /// Its position (cm).
        position: glam::DVec3,
    },
    /// A triangle refers to a vertex that does not exist.
    #[error(
        "triangle {triangle} refers to vertex {index}, but the mesh has only {vertices} vertices \
         (valid indices are 0 to {vertices} - 1; triangle indices are 0-based)"
    )]
    IndexOutOfRange {
        /// The triangle index.
        triangle: usize,
        /// The offending vertex index.
        index: u32,
        /// The number of vertices in the mesh.
        vertices: usize,
    },
    /// A triangle uses the same vertex twice.
    #[error(
        "triangle {triangle} uses the same vertex more than once, so it has no area; remove it"
    )]
    RepeatedVertex {
        /// The triangle index.
        triangle: usize,
    },
    /// A triangle has (relatively) zero area.
    #[error(
        "triangle {triangle} is degenerate (area {area:e}): its three vertices are collinear or \
         coincide; remove it or fix the vertex positions"
    )]
    DegenerateTriangle {
        /// The triangle index.
        triangle: usize,
        /// Its area.
        area: f64,
    },
    /// A triangle has the same vertex set as an earlier one.
    #[error(
        "triangle {triangle} has the same three vertices as triangle {first}; remove one of them \
         (coinciding faces can never be separated by contact)"
    )]
    DuplicateTriangle {
        /// The later triangle.
        triangle: usize,
        /// The earlier triangle with the same vertices.
        first: usize,
    },
    /// An edge is shared by more than two triangles.
    #[error(
        "edge ({a}, {b}) is shared by {} triangles {triangles:?}, but a manifold surface allows at \
         most 2; split the surface along that edge (give each sheet its own copy of the vertices)",
        .triangles.len()
    )]
    NonManifoldEdge {
        /// Smaller vertex index of the edge.
        a: u32,
        /// Larger vertex index of the edge.
        b: u32,
        /// All triangles containing the edge, ascending.
        triangles: Vec<usize>,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The file path.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// An OBJ file has a malformed line.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file path (or name given for errors).
        path: String,
        /// The 1-based line number.
        line: usize,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A generator was called with invalid arguments.
    #[error("invalid arguments to mesh generator `{generator}`: {message}")]
    InvalidGenerator {
        /// The generator's name.
        generator: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// Largest coordinate a mesh vertex may have (cm). Double precision still resolves a 1e-7 cm
/// step there, and squared lengths stay far from overflow.
pub(crate) const MAX_COORDINATE: f64 = 1e9;
