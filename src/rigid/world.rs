//! What the stages of a step share: every convex part of every body, the joints and the
//! parameters.

use glam::DVec3;

use super::body::{Body, Pose};
use super::broad;
use super::geometry::WorldPart;
use super::ObaSettings;

/// A joint with its anchor in each body's frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Joint {
    /// The two bodies.
    pub bodies: [usize; 2],
    /// The joint point in each body's frame.
    pub anchors: [DVec3; 2],
}

/// What the stages of a step share (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct World {
    /// `(body, part)` of each part, in body order.
    pub parts: Vec<(usize, usize)>,
    /// Joints.
    pub joints: Vec<Joint>,
    /// Parameters.
    pub settings: ObaSettings,
}

impl World {
    /// Every part posed at `poses`.
    pub(crate) fn pose_parts(&self, bodies: &[Body], poses: &[Pose]) -> Vec<WorldPart> {
        self.parts
            .iter()
            .map(|&(b, k)| bodies[b].world_part(k, &poses[b]))
            .collect()
    }

    /// Whether a joint links bodies `a` and `b`.
    pub(crate) fn jointed(&self, a: usize, b: usize) -> bool {
        self.joints
            .iter()
            .any(|j| j.bodies == [a, b] || j.bodies == [b, a])
    }

    /// Each part's box swept from its pose in `from` to its pose in `to`, grown by `grow`.
    pub(crate) fn swept_boxes(
        from: &[WorldPart],
        to: &[WorldPart],
        grow: f64,
    ) -> Vec<(DVec3, DVec3)> {
        from.iter()
            .zip(to)
            .map(|(a, b)| {
                let ((lo_a, hi_a), (lo_b, hi_b)) = (a.bounds(), b.bounds());
                (lo_a.min(lo_b) - grow, hi_a.max(hi_b) + grow)
            })
            .collect()
    }

    /// Pairs of parts of different bodies, one of them movable, whose `boxes` overlap.
    pub(crate) fn candidates(
        &self,
        boxes: &[(DVec3, DVec3)],
        movable: &[bool],
    ) -> Vec<(usize, usize)> {
        broad::overlapping_pairs(boxes, |p, q| {
            let (a, b) = (self.parts[p].0, self.parts[q].0);
            a == b || !movable[a] && !movable[b]
        })
    }
}
