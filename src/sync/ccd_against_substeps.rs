//! Continuous collision detection of the synchronous baseline against brute-force sub-stepping:
//! two triangles move linearly; wherever the exact intersection test finds them intersecting at
//! a sub-step, the CCD of their 15 feature pairs (6 vertex-triangle, 9 edge-edge) must report a
//! contact no later than that sub-step. Motions include the degenerate cases: everything in one
//! plane for the whole step, parallel edges (one triangle a copy of the other sliding in its
//! plane), and
//! small-integer coordinates (exactly coplanar and collinear configurations, double roots).

use super::ccd::{first_contact, Kind};
use crate::check::intersection::triangles_intersect;
use glam::DVec3;
use proptest::prelude::*;

/// Sub-steps of the brute force.
const SUBSTEPS: usize = 200;
/// The CCD's proximity gap (cm); tiny, so only real contacts count.
const GAP: f64 = 1e-9;

/// The earliest contact time over the feature pairs of triangles `a` and `b` (positions `x`,
/// displacements `d`, vertices 0-2 are `a`, 3-5 are `b`).
fn ccd(x: &[DVec3; 6], d: &[DVec3; 6]) -> Option<f64> {
    let mut best: Option<f64> = None;
    let mut consider = |kind: Kind, idx: [usize; 4]| {
        if let Some(s) = first_contact(kind, idx.map(|i| x[i]), idx.map(|i| d[i]), GAP) {
            best = Some(best.map_or(s, |b| b.min(s)));
        }
    };
    for (p, tri) in [(0, [3, 4, 5]), (1, [3, 4, 5]), (2, [3, 4, 5])]
        .into_iter()
        .chain([(3, [0, 1, 2]), (4, [0, 1, 2]), (5, [0, 1, 2])])
    {
        consider(Kind::VertexTriangle, [p, tri[0], tri[1], tri[2]]);
    }
    let edges_a = [[0, 1], [1, 2], [2, 0]];
    let edges_b = [[3, 4], [4, 5], [5, 3]];
    for ea in edges_a {
        for eb in edges_b {
            consider(Kind::EdgeEdge, [ea[0], ea[1], eb[0], eb[1]]);
        }
    }
    best
}

/// The first sub-step time at which the triangles intersect (exactly), if any.
fn brute_force(x: &[DVec3; 6], d: &[DVec3; 6]) -> Option<f64> {
    (0..=SUBSTEPS)
        .map(|k| k as f64 / SUBSTEPS as f64)
        .find(|&s| {
            let p: [DVec3; 6] = std::array::from_fn(|i| x[i] + s * d[i]);
            triangles_intersect([p[0], p[1], p[2]], [p[3], p[4], p[5]])
        })
}

/// Cases whose triangles intersect at the start are skipped (the CCD assumes a clean start).
fn check(x: [DVec3; 6], d: [DVec3; 6]) -> Result<(), TestCaseError> {
    prop_assume!(!triangles_intersect([x[0], x[1], x[2]], [x[3], x[4], x[5]]));
    if let Some(t) = brute_force(&x, &d) {
        let found = ccd(&x, &d);
        prop_assert!(
            found.is_some_and(|s| s <= t + 1e-12),
            "sub-stepping finds an intersection at s = {t}, the CCD {found:?}: x = {x:?}, d = {d:?}"
        );
    }
    Ok(())
}

fn vec3(range: f64) -> impl Strategy<Value = DVec3> + Clone {
    (-range..range, -range..range, -range..range).prop_map(|(x, y, z)| DVec3::new(x, y, z))
}

fn grid3(r: i32) -> impl Strategy<Value = DVec3> + Clone {
    (-r..=r, -r..=r, -r..=r)
        .prop_map(|(x, y, z)| DVec3::new(f64::from(x), f64::from(y), f64::from(z)))
}

fn six<S: Strategy<Value = DVec3> + Clone>(s: S) -> impl Strategy<Value = [DVec3; 6]> {
    prop::array::uniform6(s)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn general_linear_motion(x in six(vec3(1.0)), d in six(vec3(2.0))) {
        check(x, d)?;
    }

    #[test]
    fn coplanar_motion(x in six(vec3(1.0)), d in six(vec3(2.0))) {
        // Triangle b starts 3 cm to the side, so most cases start apart.
        let flat = |v: DVec3| DVec3::new(v.x, 0.0, v.z);
        let mut x = x.map(flat);
        for p in &mut x[3..] {
            p.x += 3.0;
        }
        check(x, d.map(flat))?;
    }

    #[test]
    fn sliding_copy_has_parallel_edges(
        a in prop::array::uniform3(vec3(1.0)),
        offset in (1.0..2.0f64, -1.0..1.0f64),
        slide in (-3.0..0.0f64, -1.0..1.0f64),
        da in vec3(2.0),
    ) {
        // Triangle b is a copy of a moved within a's plane, and slides in that plane: the
        // whole motion is coplanar and every edge of b is parallel to one of a.
        let (u, w) = (a[1] - a[0], a[2] - a[0]);
        let shift = offset.0 * u + offset.1 * w;
        let db = da + slide.0 * u + slide.1 * w;
        let x = [a[0], a[1], a[2], a[0] + shift, a[1] + shift, a[2] + shift];
        let d = [da, da, da, db, db, db];
        check(x, d)?;
    }

    #[test]
    fn integer_configurations(x in six(grid3(2)), d in six(grid3(5))) {
        // Triangle b starts 4 cm to the side, so most cases start apart.
        let mut x = x;
        for p in &mut x[3..] {
            p.x += 4.0;
        }
        check(x, d)?;
    }
}
