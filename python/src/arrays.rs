//! numpy arrays to and from the engine's vectors, with the shape checked and named.

use glam::DVec3;
use numpy::{AllowTypeChange, PyArray1, PyArray2, PyArrayLike1, PyArrayLike2, PyArrayMethods};
use pyo3::prelude::*;

use crate::InputError;

/// Points from an array-like of shape `(n, 3)` (any real dtype); `what` names it in errors.
pub(crate) fn points(
    what: &str,
    a: &PyArrayLike2<'_, f64, AllowTypeChange>,
) -> PyResult<Vec<DVec3>> {
    let a = a.as_array();
    if a.ncols() != 3 {
        return Err(InputError::new_err(format!(
            "{what}: expected shape (n, 3), got {:?}",
            a.shape()
        )));
    }
    Ok(a.rows()
        .into_iter()
        .map(|r| DVec3::new(r[0], r[1], r[2]))
        .collect())
}

/// Triangles from an integer array-like of shape `(m, 3)` (0-based vertex indices).
pub(crate) fn triangles(
    what: &str,
    a: &PyArrayLike2<'_, i64, AllowTypeChange>,
) -> PyResult<Vec<[u32; 3]>> {
    let a = a.as_array();
    if a.ncols() != 3 {
        return Err(InputError::new_err(format!(
            "{what}: expected shape (m, 3), got {:?}",
            a.shape()
        )));
    }
    a.rows()
        .into_iter()
        .enumerate()
        .map(|(k, r)| {
            let mut t = [0; 3];
            for (slot, &v) in t.iter_mut().zip(&r) {
                *slot = index(&format!("{what}[{k}]"), v)?;
            }
            Ok(t)
        })
        .collect()
}

/// `a` as a numpy array of integers (any integer dtype; empty is fine), for the index arguments:
/// floats are refused rather than truncated, naming `what` and the first values.
pub(crate) fn integers<'py>(what: &str, a: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let array = a.py().import("numpy")?.call_method1("asarray", (a,))?;
    let size: usize = array.getattr("size")?.extract()?;
    let dtype = array.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    if size > 0 && kind != "i" && kind != "u" {
        let first = array
            .call_method0("ravel")?
            .get_item(pyo3::types::PySlice::new(a.py(), 0, 3, 1))?
            .call_method0("tolist")?;
        return Err(InputError::new_err(format!(
            "{what}: vertex indices must be integers, got {} values such as {first}",
            dtype.str()?
        )));
    }
    Ok(array)
}

/// Vertex indices from an integer array-like of shape `(k,)`.
pub(crate) fn indices(
    what: &str,
    a: &PyArrayLike1<'_, i64, AllowTypeChange>,
) -> PyResult<Vec<u32>> {
    a.as_array()
        .iter()
        .enumerate()
        .map(|(k, &v)| index(&format!("{what}[{k}]"), v))
        .collect()
}

/// `v` as a vertex index.
fn index(what: &str, v: i64) -> PyResult<u32> {
    u32::try_from(v).map_err(|_| {
        InputError::new_err(format!("{what}: {v} is not a vertex index (0 to 2^32 - 2)"))
    })
}

/// A new float64 array of shape `(n, 3)` holding `point(i)` in row `i`: the only copy made.
pub(crate) fn to_numpy<'py>(
    py: Python<'py>,
    n: usize,
    point: impl Fn(usize) -> DVec3,
) -> Bound<'py, PyArray2<f64>> {
    let array = PyArray2::<f64>::zeros(py, [n, 3], false);
    {
        let mut rows = array.readwrite();
        let flat = rows
            .as_slice_mut()
            .expect("a new array is contiguous and not borrowed");
        for (i, row) in flat.chunks_exact_mut(3).enumerate() {
            row.copy_from_slice(&point(i).to_array());
        }
    }
    array
}

/// Triangles as a new int64 array of shape `(m, 3)`.
pub(crate) fn triangles_to_numpy<'py>(
    py: Python<'py>,
    triangles: &[[u32; 3]],
) -> PyResult<Bound<'py, PyArray2<i64>>> {
    let flat = triangles.iter().flatten().map(|&v| i64::from(v));
    PyArray1::from_iter(py, flat).reshape([triangles.len(), 3])
}
