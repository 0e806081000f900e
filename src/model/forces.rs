//! The model's forces, each with the clock it ticks at: the elastic families' clock bins (or,
//! with per-element clocks, each element), gravity, drag and the prescribed forces.
//!
//! ACM ticks each force at the multiples of its own clock (an asynchronous variational
//! integrator); the synchronous baselines tick them all at their step and read only the
//! families. A tick is a kick of the velocities of the vertices it acts on, at the positions of
//! its time ([`Model::tick_force`]).

use super::contents::Model;
use crate::forces::external::{gravity_tick, vertex_gravity_tick};

/// What a force acts through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ForceTarget {
    /// The springs of one clock bin (a super-element).
    Springs(u8),
    /// One spring.
    Spring(u32),
    /// The hinges of one clock bin (a super-element).
    Hinges(u8),
    /// One hinge.
    Hinge(u32),
    /// Gravity on every free vertex (a super-element).
    Gravity,
    /// Gravity on one free vertex.
    VertexGravity(u32),
    /// A prescribed force.
    Prescribed(u32),
    /// Air drag.
    Drag,
}

impl ForceTarget {
    /// The force in a user's terms: `stretching`, `bending`, `gravity`, `a prescribed force` or
    /// `drag`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Springs(_) | Self::Spring(_) => "stretching",
            Self::Hinges(_) | Self::Hinge(_) => "bending",
            Self::Gravity | Self::VertexGravity(_) => "gravity",
            Self::Prescribed(_) => "a prescribed force",
            Self::Drag => "drag",
        }
    }
}

/// A force of the model and its clock: it ticks at `n * clock`, `n = 0, 1, 2, ...`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Force {
    /// What it acts through.
    pub target: ForceTarget,
    /// Its clock (s).
    pub clock: f64,
}

impl Model {
    /// The vertices a tick of force `f` kicks, or `None` for a whole-mesh tick
    /// ([`Self::is_whole_mesh`]), which may kick every vertex.
    pub(crate) fn force_vertices(&self, f: usize) -> Option<&[u32]> {
        let target = &self.forces[f].target;
        if self.is_whole_mesh(*target) {
            return None;
        }
        Some(match target {
            ForceTarget::Spring(e) => &self.springs.kernel.ends[*e as usize],
            ForceTarget::Hinge(e) => &self.hinges.kernel.verts[*e as usize],
            ForceTarget::Prescribed(p) => &self.prescribed[*p as usize].vertices,
            ForceTarget::VertexGravity(v) => std::slice::from_ref(v),
            ForceTarget::Springs(b) => &self.springs.bins[*b as usize].vertices,
            ForceTarget::Hinges(b) => &self.hinges.bins[*b as usize].vertices,
            ForceTarget::Gravity | ForceTarget::Drag => {
                unreachable!("whole-mesh ticks return above")
            }
        })
    }

    /// Whether a tick of `target` may change every vertex's velocity: gravity, drag, and the
    /// clock bins that touch at least half of the vertices (thesis §8.1's *all-vertex events*).
    pub(crate) fn is_whole_mesh(&self, target: ForceTarget) -> bool {
        match target {
            ForceTarget::Springs(b) => self.springs.bins[b as usize].is_dense(),
            ForceTarget::Hinges(b) => self.hinges.bins[b as usize].is_dense(),
            ForceTarget::Gravity | ForceTarget::Drag => true,
            ForceTarget::Spring(_)
            | ForceTarget::Hinge(_)
            | ForceTarget::VertexGravity(_)
            | ForceTarget::Prescribed(_) => false,
        }
    }

    /// Ticks force `f` at `t` (over its clock): kicks the velocities of the vertices it acts on.
    /// Returns the largest squared speed among the vertices it kicked.
    pub(crate) fn tick_force(&mut self, f: usize, t: f64) -> f64 {
        let Force { target, clock } = self.forces[f];
        let state = &mut self.state;
        // From the parallel ticks as they kick, afterwards for the others.
        let fastest = match target {
            ForceTarget::Springs(b) => Some(self.springs.tick_bin(b as usize, t, clock, state)),
            ForceTarget::Spring(e) => {
                self.springs.tick_one(e as usize, t, clock, state);
                None
            }
            ForceTarget::Hinges(b) => Some(self.hinges.tick_bin(b as usize, t, clock, state)),
            ForceTarget::Hinge(e) => {
                self.hinges.tick_one(e as usize, t, clock, state);
                None
            }
            ForceTarget::Gravity => Some(gravity_tick(state, self.gravity, t, clock)),
            ForceTarget::VertexGravity(v) => {
                vertex_gravity_tick(state, v as usize, self.gravity, t, clock);
                None
            }
            ForceTarget::Prescribed(p) => {
                self.prescribed[p as usize].tick(state, t, clock);
                None
            }
            ForceTarget::Drag => {
                self.drag.tick(state, t);
                Some(state.fastest(self.drag.vertices.iter().copied()))
            }
        };
        fastest.unwrap_or_else(|| {
            let kicked = self.force_vertices(f).unwrap_or_default();
            self.state.fastest(kicked.iter().copied())
        })
    }
}
