//! The default view of a scene: looking at the centre of its bounding box from the front,
//! right and above, far enough to see all of it.

use glam::DVec3;

/// A perspective camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Camera {
    /// Where it looks from (cm).
    pub eye: DVec3,
    /// Where it looks at (cm).
    pub target: DVec3,
    /// Vertical field of view (radians).
    pub fov_y: f64,
}

/// The direction from the target to the eye of the default view (front, right, above).
pub(crate) const VIEW_DIRECTION: DVec3 = DVec3::new(0.55, 0.45, 1.0);

/// The vertical field of view of the default view: 35 degrees.
pub(crate) const FOV_Y: f64 = 35.0 * std::f64::consts::PI / 180.0;

impl Camera {
    /// The default view of the box `lo .. hi` in a picture of aspect `width / height`.
    pub(crate) fn framing(lo: DVec3, hi: DVec3, aspect: f64) -> Self {
        let target = 0.5 * (lo + hi);
        let radius = (0.5 * (hi - lo).length()).max(1e-3);
        let half = 0.5 * FOV_Y;
        // The bounding sphere fits both the height and the width of the picture.
        let fit = half.tan().min(half.tan() * aspect).atan();
        let distance = 1.05 * radius / fit.sin();
        Self {
            eye: target + distance * VIEW_DIRECTION.normalize(),
            target,
            fov_y: FOV_Y,
        }
    }

    /// The camera's basis: right, up, and forward (towards the target), unit vectors.
    pub(crate) fn basis(&self) -> (DVec3, DVec3, DVec3) {
        let forward = (self.target - self.eye).normalize();
        let right = forward.cross(DVec3::Y).normalize();
        (right, right.cross(forward), forward)
    }

    /// `p` in a picture of `width x height` pixels: `(x, y, depth)`, x right and y down from
    /// the top-left corner, depth the distance along the view; `None` behind the camera.
    pub(crate) fn project(&self, p: DVec3, width: f64, height: f64) -> Option<(f64, f64, f64)> {
        let (right, up, forward) = self.basis();
        let d = p - self.eye;
        let depth = d.dot(forward);
        if depth <= 1e-9 {
            return None;
        }
        let scale = 0.5 * height / (0.5 * self.fov_y).tan();
        Some((
            0.5 * width + scale * d.dot(right) / depth,
            0.5 * height - scale * d.dot(up) / depth,
            depth,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_framed_box_is_inside_the_picture_and_its_centre_in_the_middle() {
        let (lo, hi) = (DVec3::new(-3.0, 0.0, -1.0), DVec3::new(5.0, 2.0, 1.0));
        for (w, h) in [(400.0, 300.0), (300.0, 400.0)] {
            let camera = Camera::framing(lo, hi, w / h);
            let (x, y, _) = camera.project(0.5 * (lo + hi), w, h).unwrap();
            assert!((x - 0.5 * w).abs() < 1e-9 && (y - 0.5 * h).abs() < 1e-9);
            for k in 0..8 {
                let corner = DVec3::new(
                    if k & 1 == 0 { lo.x } else { hi.x },
                    if k & 2 == 0 { lo.y } else { hi.y },
                    if k & 4 == 0 { lo.z } else { hi.z },
                );
                let (x, y, _) = camera.project(corner, w, h).unwrap();
                assert!((0.0..w).contains(&x) && (0.0..h).contains(&y), "{corner}");
            }
        }
    }
}
