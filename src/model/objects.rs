//! The objects of a model: each one's slice of the global vertex and triangle buffers, and how
//! a global vertex is named in a user's terms.

/// One object's slice of the global buffers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRange {
    /// Object name.
    pub name: String,
    /// First global vertex index.
    pub first_vertex: u32,
    /// Number of vertices.
    pub vertex_count: u32,
    /// First global triangle index.
    pub first_triangle: u32,
    /// Number of triangles.
    pub triangle_count: u32,
}

/// The index of the object that global vertex `v` belongs to.
pub(crate) fn owner(objects: &[ObjectRange], v: u32) -> usize {
    objects.partition_point(|o| o.first_vertex <= v).max(1) - 1
}

/// Names global vertices in a user's terms: `vertex 12 of "sheet"`, `edge (3, 4) of "sheet"`,
/// `triangle (0, 1, 2) of "floor"` (indices local to the object, as in its mesh).
pub(crate) fn describe_vertices(objects: &[ObjectRange], vertices: &[u32]) -> String {
    let object = &objects[owner(objects, vertices[0])];
    let local: Vec<u32> = vertices.iter().map(|&v| v - object.first_vertex).collect();
    let what = match local.as_slice() {
        [v] => format!("vertex {v}"),
        [a, b] => format!("edge ({a}, {b})"),
        [a, b, c] => format!("triangle ({a}, {b}, {c})"),
        more => format!("vertices {more:?}"),
    };
    format!("{what} of {:?}", object.name)
}
