//! The [`Model`] itself: what it holds and what any method reads of it.

use glam::DVec3;

use crate::forces::external::{Drag, PrescribedForce, ScriptedMotion};
use crate::forces::{HingeFamily, SpringFamily};
use crate::mesh::TriangleList;
use crate::state::VertexState;

use super::forces::Force;
use super::objects::ObjectRange;
use super::size::{Clocks, ModelSize};

/// What is simulated (see the module docs).
#[derive(Debug)]
pub struct Model {
    /// Scene name.
    pub(crate) name: String,
    /// Objects and their slices of the global buffers.
    pub(crate) objects: Vec<ObjectRange>,
    /// All triangles, in global vertex indices (one copy, shared with the broad phase).
    pub(crate) triangles: TriangleList,
    /// All edges, in global vertex indices, when the scene has contact (the penalty layers'
    /// edge-edge pairs); empty otherwise.
    pub(crate) edges: Vec<[u32; 2]>,
    /// The vertex buffers.
    pub(crate) state: VertexState,
    /// The stretching family.
    pub(crate) springs: SpringFamily,
    /// The bending family.
    pub(crate) hinges: HingeFamily,
    /// Gravitational acceleration (cm/s^2).
    pub(crate) gravity: DVec3,
    /// Prescribed forces.
    pub(crate) prescribed: Vec<PrescribedForce>,
    /// Air drag.
    pub(crate) drag: Drag,
    /// Scripted motions.
    pub(crate) scripts: Vec<ScriptedMotion>,
    /// Every force and its clock.
    pub(crate) forces: Vec<Force>,
    /// Time between frames (s).
    pub(crate) frame_interval: f64,
    /// The clocks, for reports.
    pub(crate) clocks: Clocks,
    /// The size, for reports.
    pub(crate) size: ModelSize,
}

impl Model {
    /// Scene name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Objects and their slices of the global buffers.
    pub fn objects(&self) -> &[ObjectRange] {
        &self.objects
    }

    /// All triangles, in global vertex indices.
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// The vertex buffers (positions at each vertex's own clock; see [`VertexState`]).
    pub fn state(&self) -> &VertexState {
        &self.state
    }

    /// The stretching family.
    pub fn springs(&self) -> &SpringFamily {
        &self.springs
    }

    /// The bending family.
    pub fn hinges(&self) -> &HingeFamily {
        &self.hinges
    }

    /// Gravitational acceleration (cm/s^2).
    pub(crate) fn gravity(&self) -> DVec3 {
        self.gravity
    }

    /// Time between frames (s).
    pub fn frame_interval(&self) -> f64 {
        self.frame_interval
    }

    /// Writes every vertex's position at time `s` into `out`.
    pub fn positions_at(&self, s: f64, out: &mut Vec<DVec3>) {
        self.state.positions_at(s, out);
    }
}
