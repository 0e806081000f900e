//! `acm render`: a frame drawn on the CPU as a shaded picture, with no GPU or display.
//!
//! Triangles are rasterized into a depth buffer at twice the picture's size (four samples a
//! pixel, averaged), lit from above the camera with smooth vertex normals, two-sided, in each
//! object's colour over a light background.

use glam::DVec3;

use super::camera::Camera;
use super::frames::ObjectSpan;
use super::palette::object_colour;
use acm::mesh::TriMesh;

/// An 8-bit RGB picture, rows from the top.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Picture {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `width * height` pixels of three bytes.
    pub rgb: Vec<u8>,
}

/// Samples a pixel along each axis.
const SAMPLES: usize = 2;

/// Area-weighted vertex normals (zero for a vertex no triangle uses).
fn vertex_normals(mesh: &TriMesh) -> Vec<DVec3> {
    let mut normals = vec![DVec3::ZERO; mesh.positions.len()];
    for t in &mesh.triangles {
        let [a, b, c] = t.map(|v| mesh.positions[v as usize]);
        let n = (b - a).cross(c - a);
        for v in t {
            normals[*v as usize] += n;
        }
    }
    for n in &mut normals {
        *n = n.normalize_or_zero();
    }
    normals
}

/// The background at height `y` of `height`: light grey, darker towards the bottom.
fn background(y: usize, height: usize) -> [f32; 3] {
    let s = 0.92 - 0.17 * y as f32 / height as f32;
    [s, s, s + 0.02]
}

/// Draws `mesh` (objects `spans`, coloured in order) in a `width x height` picture from the
/// default view of its bounding box.
pub(crate) fn render(mesh: &TriMesh, spans: &[ObjectSpan], width: usize, height: usize) -> Picture {
    let (w, h) = (width * SAMPLES, height * SAMPLES);
    let (lo, hi) = mesh.bounds();
    let camera = Camera::framing(lo, hi, width as f64 / height as f64);
    let (right, up, forward) = camera.basis();
    let light = (up * 1.0 - right * 0.4 - forward * 0.6).normalize();
    let normals = vertex_normals(mesh);
    let projected: Vec<Option<(f64, f64, f64)>> = mesh
        .positions
        .iter()
        .map(|&p| camera.project(p, w as f64, h as f64))
        .collect();
    let mut object_of = vec![0usize; mesh.positions.len()];
    for (k, span) in spans.iter().enumerate() {
        let end = (span.first + span.count).min(object_of.len());
        object_of[span.first.min(end)..end].fill(k);
    }
    let mut depth = vec![f64::INFINITY; w * h];
    let mut colour: Vec<[f32; 3]> = (0..w * h).map(|i| background(i / w, h)).collect();
    for t in &mesh.triangles {
        let [Some(a), Some(b), Some(c)] = t.map(|v| projected[v as usize]) else {
            continue;
        };
        let area = (b.0 - a.0) * (c.1 - a.1) - (b.1 - a.1) * (c.0 - a.0);
        if area.abs() < 1e-12 {
            continue;
        }
        let x0 = a.0.min(b.0).min(c.0).floor().max(0.0) as usize;
        let x1 = (a.0.max(b.0).max(c.0).ceil() as usize).min(w);
        let y0 = a.1.min(b.1).min(c.1).floor().max(0.0) as usize;
        let y1 = (a.1.max(b.1).max(c.1).ceil() as usize).min(h);
        let base = object_colour(object_of[t[0] as usize]);
        let [na, nb, nc] = t.map(|v| normals[v as usize]);
        for y in y0..y1 {
            let py = y as f64 + 0.5;
            for x in x0..x1 {
                let px = x as f64 + 0.5;
                let wa = ((b.0 - px) * (c.1 - py) - (b.1 - py) * (c.0 - px)) / area;
                let wb = ((c.0 - px) * (a.1 - py) - (c.1 - py) * (a.0 - px)) / area;
                let wc = 1.0 - wa - wb;
                if wa < 0.0 || wb < 0.0 || wc < 0.0 {
                    continue;
                }
                let z = wa * a.2 + wb * b.2 + wc * c.2;
                let i = y * w + x;
                if z >= depth[i] {
                    continue;
                }
                depth[i] = z;
                let mut n = (wa * na + wb * nb + wc * nc).normalize_or_zero();
                if n.dot(forward) > 0.0 {
                    n = -n; // the side facing the camera
                }
                let diffuse = n.dot(light).max(0.0) as f32;
                let lit = 0.3 + 0.7 * diffuse;
                colour[i] = base.map(|c| c * lit);
            }
        }
    }
    let mut rgb = Vec::with_capacity(width * height * 3);
    for y in 0..height {
        for x in 0..width {
            let mut sum = [0f32; 3];
            for sy in 0..SAMPLES {
                for sx in 0..SAMPLES {
                    let c = colour[(y * SAMPLES + sy) * w + x * SAMPLES + sx];
                    for k in 0..3 {
                        sum[k] += c[k];
                    }
                }
            }
            let n = (SAMPLES * SAMPLES) as f32;
            rgb.extend(sum.map(|s| ((s / n).clamp(0.0, 1.0) * 255.0).round() as u8));
        }
    }
    Picture { width, height, rgb }
}

impl Picture {
    /// Writes the picture as a PNG file.
    pub(crate) fn write_png(&self, w: impl std::io::Write) -> std::io::Result<()> {
        let mut encoder = png::Encoder::new(w, self.width as u32, self.height as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
        writer
            .write_image_data(&self.rgb)
            .map_err(std::io::Error::other)?;
        writer.finish().map_err(std::io::Error::other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_triangle_covers_the_middle_in_its_colour_and_leaves_the_corners_to_the_background() {
        let mesh = TriMesh::new(
            vec![
                DVec3::new(-1.0, 0.0, -1.0),
                DVec3::new(1.0, 0.0, -1.0),
                DVec3::new(0.0, 0.0, 1.0),
            ],
            vec![[0, 2, 1]],
        );
        let spans = [ObjectSpan {
            name: "t".into(),
            first: 0,
            count: 3,
        }];
        let picture = render(&mesh, &spans, 64, 48);
        assert_eq!(picture.rgb.len(), 64 * 48 * 3);
        let pixel = |x: usize, y: usize| {
            let i = 3 * (y * 64 + x);
            [picture.rgb[i], picture.rgb[i + 1], picture.rgb[i + 2]]
        };
        let corner = pixel(0, 0);
        assert_eq!(corner[0], corner[1], "the background is grey");
        let middle = pixel(32, 24);
        assert_ne!(middle, corner);
        // The first object's colour is grey too, lit: all three channels close.
        assert!(middle[2].abs_diff(middle[0]) < 40, "{middle:?}");
    }
}
