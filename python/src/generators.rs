//! The library's mesh generators as numpy arrays: `acm.sheet`, `acm.icosphere`.

use acm::mesh::{self, MeshError, TriMesh};
use numpy::PyArray2;
use pyo3::prelude::*;

use crate::{arrays, InputError};

/// A mesh as `(vertices, triangles)`: float64 (n, 3) and int64 (m, 3).
type Arrays<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<i64>>);

/// `mesh` as numpy arrays, or the generator's error as `acm.InputError`.
fn to_arrays<'py>(py: Python<'py>, mesh: Result<TriMesh, MeshError>) -> PyResult<Arrays<'py>> {
    let mesh = mesh.map_err(|e| InputError::new_err(e.to_string()))?;
    let vertices = arrays::to_numpy(py, mesh.positions.len(), |i| mesh.positions[i]);
    Ok((vertices, arrays::triangles_to_numpy(py, &mesh.triangles)?))
}

/// `value` as a count of at least `min`, or an error naming `function`'s argument `name`.
fn count(function: &str, name: &str, value: i64, min: i64) -> PyResult<usize> {
    match usize::try_from(value) {
        Ok(n) if value >= min => Ok(n),
        _ => Err(InputError::new_err(format!(
            "acm.{function}: `{name}` must be at least {min}, got {value}"
        ))),
    }
}

/// A flat sheet of `nx * ny` vertices in the XZ plane (y = 0), centred at the origin, `width`
/// along x and `depth` along z (cm); vertex `j * nx + i` is column `i`, row `j`; normals +y.
/// Returns `(vertices, triangles)`.
#[pyfunction]
pub(crate) fn sheet(
    py: Python<'_>,
    nx: i64,
    ny: i64,
    width: f64,
    depth: f64,
) -> PyResult<Arrays<'_>> {
    let (nx, ny) = (count("sheet", "nx", nx, 2)?, count("sheet", "ny", ny, 2)?);
    to_arrays(py, mesh::sheet(nx, ny, width, depth))
}

/// A sphere of `radius` (cm) centred at the origin: an icosahedron subdivided `subdivisions`
/// times, normals outward. Returns `(vertices, triangles)`.
#[pyfunction]
pub(crate) fn icosphere(py: Python<'_>, radius: f64, subdivisions: i64) -> PyResult<Arrays<'_>> {
    let subdivisions = count("icosphere", "subdivisions", subdivisions, 0)?;
    let subdivisions = u32::try_from(subdivisions).unwrap_or(u32::MAX);
    to_arrays(py, mesh::icosphere(radius, subdivisions))
}
