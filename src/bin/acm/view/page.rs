//! `acm view`: one self-contained HTML page that plays a run's frames with WebGL (an orbiting
//! camera, a time slider, a colour per object). The frames are embedded as base64 `float`
//! arrays; the page loads nothing else.

use std::io::Write;

use super::camera::{Camera, FOV_Y, VIEW_DIRECTION};
use super::frames::{spans_or_whole, FrameSet};
use super::palette::object_colour;

/// The page, with `__TITLE__` and `__DATA__` to fill in.
const TEMPLATE: &str = include_str!("viewer.html");

/// Standard base64 of `bytes`.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Writes the page of the frames `set` (every frame, in order) to `out`; an error names the
/// frame file that cannot be read or that changes the topology.
pub(crate) fn write_page(set: &FrameSet, out: &mut impl Write) -> Result<(), String> {
    let (first, spans) = set.read(0)?;
    let spans = spans_or_whole(spans, first.positions.len());
    let mut positions: Vec<u8> = Vec::new();
    let (mut lo, mut hi) = first.bounds();
    for index in 0..set.paths.len() {
        let mesh = if index == 0 {
            first.clone()
        } else {
            set.read(index)?.0
        };
        if mesh.triangles != first.triangles || mesh.positions.len() != first.positions.len() {
            return Err(format!(
                "{}: the mesh differs from the first frame's; a sequence must keep its topology",
                set.paths[index].display()
            ));
        }
        let (l, h) = mesh.bounds();
        (lo, hi) = (lo.min(l), hi.max(h));
        for p in &mesh.positions {
            for c in p.as_vec3().to_array() {
                positions.extend_from_slice(&c.to_le_bytes());
            }
        }
    }
    let triangles: Vec<u8> = first
        .triangles
        .iter()
        .flatten()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let camera = Camera::framing(lo, hi, 4.0 / 3.0);
    let times = set.times();
    let frame_seconds = times
        .as_ref()
        .filter(|t| t.len() > 1)
        .map_or(0.04, |t| (t[1] - t[0]).clamp(0.01, 1.0));
    let objects: Vec<serde_json::Value> = spans
        .iter()
        .enumerate()
        .map(|(k, s)| {
            serde_json::json!({
                "name": s.name, "first": s.first, "count": s.count, "colour": object_colour(k),
            })
        })
        .collect();
    let data = serde_json::json!({
        "vertices": first.positions.len(),
        "frames": set.paths.len(),
        "times": times.map(|t| t[..set.paths.len()].to_vec()),
        "frame_seconds": frame_seconds,
        "objects": objects,
        "centre": (0.5 * (lo + hi)).to_array(),
        "radius": (0.5 * (hi - lo).length()).max(1e-3),
        "distance": (camera.eye - camera.target).length(),
        "view_direction": VIEW_DIRECTION.to_array(),
        "fov_y": FOV_Y,
        "triangles": base64(&triangles),
        "positions": base64(&positions),
    });
    let title = set.dir.file_name().map_or_else(
        || set.dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let escape = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;");
    // JSON inside a script element: `</` must not close it.
    let json = data.to_string().replace("</", "<\\/");
    let (head, rest) = TEMPLATE
        .split_once("__TITLE__")
        .expect("the template has a title");
    let (middle, tail) = rest.split_once("__DATA__").expect("the template has data");
    for part in [head, &escape(&title), middle, &json, tail] {
        out.write_all(part.as_bytes()).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_alphabet_and_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(&[0xff, 0xfe, 0x00]), "//4A");
    }
}
