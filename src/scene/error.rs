//! The error of an invalid scene.

use crate::mesh::MeshError;

/// What is wrong with a scene, and where.
///
/// `path` names the field in profile terms, e.g. `object[1].material.density`; the profile loader
/// turns it into a file and line.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SceneError {
    /// Field path, e.g. `object[0].mesh`.
    pub path: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl SceneError {
    /// A new error at `path`.
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }

    /// An invalid mesh of object `object`.
    pub(crate) fn mesh(object: usize, err: &MeshError) -> Self {
        Self::new(format!("object[{object}].mesh"), err.to_string())
    }
}
