//! Optimization-based animation of rigid bodies: geometry against brute force, the QP solver
//! against a dense reference, and the physics of short runs (no overlap, momentum, energy,
//! resting stacks, Newton's cradle, a sliding box).

mod common;

use acm::check::distance::point_triangle_distance;
use acm::check::triangle_distance;
use acm::rigid::body::{Body, Pose};
use acm::rigid::geometry::tangent_frame;
use acm::rigid::geometry::{contact_points, separation, WorldPart};
use acm::rigid::hull::convex_hull;
use acm::rigid::impulses::{self, Contact};
use acm::rigid::qp::{Qp, QpFailure};
use acm::rigid::scene::{
    BodyMotion, BodyShape, BodySpec, FrictionCoupling, JointSpec, ObaSettings, RigidScene,
    ShellMaterial,
};
use acm::rigid::{ObaSimulation, World};
use acm::scene::{Method, Scene};
use acm::{NoFrames, Stepper};
use common::Audited;
use glam::{DQuat, DVec3};

/// splitmix64: reproducible random configurations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
    fn vec(&mut self, s: f64) -> DVec3 {
        DVec3::new(self.range(-s, s), self.range(-s, s), self.range(-s, s))
    }
}

/// A random convex polytope (the hull of random points) posed at `center`, with its
/// surface triangles in world coordinates.
fn random_polytope(rng: &mut Rng, center: DVec3) -> (WorldPart, Vec<[DVec3; 3]>) {
    let points: Vec<DVec3> = (0..12).map(|_| center + rng.vec(1.0)).collect();
    let (vertices, triangles) = convex_hull(&points).expect("random points span a solid");
    let p = acm::rigid::shape::Polytope::from_surface(vertices.clone(), triangles.clone());
    let tris = triangles
        .iter()
        .map(|t| t.map(|i| vertices[i as usize]))
        .collect();
    (
        WorldPart {
            vertices: p.vertices,
            normals: p.normals,
            edges: p.edges,
            radius: 0.0,
        },
        tris,
    )
}

/// Brute-force signed distance: apart, the smallest triangle-triangle distance of the
/// surfaces; overlapping, minus the depth of the origin in the Minkowski difference `B - A`
/// (the hull of all vertex differences: the smallest offset of its face planes).
fn brute_signed_distance(
    a: &WorldPart,
    ta: &[[DVec3; 3]],
    b: &WorldPart,
    tb: &[[DVec3; 3]],
) -> f64 {
    let differences: Vec<DVec3> = b
        .vertices
        .iter()
        .flat_map(|q| a.vertices.iter().map(move |p| *q - *p))
        .collect();
    let (v, t) = convex_hull(&differences).expect("a solid difference");
    let offsets: Vec<f64> = t
        .iter()
        .map(|f| {
            let [p, q, r] = f.map(|i| v[i as usize]);
            let n = (q - p).cross(r - p).normalize();
            n.dot(p)
        })
        .collect();
    if offsets.iter().all(|&h| h > 0.0) {
        return -offsets.iter().copied().fold(f64::INFINITY, f64::min);
    }
    let mut d = f64::INFINITY;
    for x in ta {
        for y in tb {
            d = d.min(triangle_distance(*x, *y));
        }
    }
    d
}

#[test]
fn signed_distance_matches_brute_force_on_random_convex_pairs() {
    let mut rng = Rng(11);
    let (mut apart, mut overlapping) = (0, 0);
    for _ in 0..300 {
        let (a, ta) = random_polytope(&mut rng, DVec3::ZERO);
        let offset = rng.vec(1.0).normalize() * rng.range(0.3, 3.0);
        let (b, tb) = random_polytope(&mut rng, offset);
        let s = separation(&a, &b);
        let brute = brute_signed_distance(&a, &ta, &b, &tb);
        // Measured: at most 5.6e-16 cm apart over these pairs.
        assert!(
            (s.distance - brute).abs() < 1e-9,
            "{} vs {brute}",
            s.distance
        );
        if brute > 0.0 {
            apart += 1;
        } else {
            overlapping += 1;
        }
    }
    assert!(
        apart > 50 && overlapping > 50,
        "{apart} apart, {overlapping} overlapping"
    );
}

#[test]
fn sphere_distances_match_the_surface_distance() {
    let mut rng = Rng(5);
    for _ in 0..200 {
        let (a, ta) = random_polytope(&mut rng, DVec3::ZERO);
        let center = rng.vec(1.0).normalize() * rng.range(0.5, 3.0);
        let radius = rng.range(0.1, 1.0);
        let sphere = WorldPart {
            vertices: vec![center],
            normals: Vec::new(),
            edges: Vec::new(),
            radius,
        };
        let s = separation(&a, &sphere);
        let core = ta
            .iter()
            .map(|t| point_triangle_distance(center, *t))
            .fold(f64::INFINITY, f64::min);
        let inside = a.normals.iter().all(|n| {
            let top = a
                .vertices
                .iter()
                .map(|v| v.dot(*n))
                .fold(f64::NEG_INFINITY, f64::max);
            n.dot(center) < top
        });
        let brute = if inside {
            -core - radius
        } else {
            core - radius
        };
        assert!(
            (s.distance - brute).abs() < 1e-9,
            "{} vs {brute}",
            s.distance
        );
    }
}

fn posed_box(size: DVec3, pose: (DVec3, DQuat)) -> (WorldPart, Vec<[DVec3; 3]>) {
    let p = acm::rigid::shape::Polytope::cuboid(size, DVec3::ZERO);
    let at = |v: DVec3| pose.1 * v + pose.0;
    let tris = p
        .triangles
        .iter()
        .map(|t| t.map(|i| at(p.vertices[i as usize])))
        .collect();
    (
        WorldPart {
            vertices: p.vertices.iter().map(|&v| at(v)).collect(),
            normals: p.normals.iter().map(|&n| pose.1 * n).collect(),
            edges: p.edges.iter().map(|&e| pose.1 * e).collect(),
            radius: 0.0,
        },
        tris,
    )
}

#[test]
fn contact_points_of_resting_boxes_span_the_overlap_of_their_faces() {
    let mut rng = Rng(3);
    for _ in 0..50 {
        let lower = DVec3::new(rng.range(1.0, 3.0), 1.0, rng.range(1.0, 3.0));
        let upper = DVec3::new(rng.range(1.0, 3.0), 1.0, rng.range(1.0, 3.0));
        let turn = DQuat::from_rotation_y(rng.range(0.0, 3.0));
        let shift = DVec3::new(rng.range(-1.0, 1.0), 1.0 + 1e-4, rng.range(-1.0, 1.0));
        let (a, ta) = posed_box(lower, (DVec3::ZERO, DQuat::IDENTITY));
        let (b, tb) = posed_box(upper, (shift, turn));
        let s = separation(&a, &b);
        let points = contact_points(&a, &b, s.normal, 1e-3);
        assert!(points.len() <= 8);
        for p in &points {
            let da = ta
                .iter()
                .map(|t| point_triangle_distance(*p, *t))
                .fold(f64::INFINITY, f64::min);
            let db = tb
                .iter()
                .map(|t| point_triangle_distance(*p, *t))
                .fold(f64::INFINITY, f64::min);
            assert!(
                da < 2e-3 && db < 2e-3,
                "a contact point {da} and {db} from the boxes"
            );
        }
        // Brute force: the share of a grid over the lower box's top face under the upper box.
        let (mut inside, n) = (0usize, 200);
        for i in 0..n {
            for k in 0..n {
                let x = -0.5 * lower.x + lower.x * (i as f64 + 0.5) / n as f64;
                let z = -0.5 * lower.z + lower.z * (k as f64 + 0.5) / n as f64;
                let local = turn.inverse() * (DVec3::new(x, shift.y, z) - shift);
                if local.x.abs() <= 0.5 * upper.x && local.z.abs() <= 0.5 * upper.z {
                    inside += 1;
                }
            }
        }
        let brute_area = lower.x * lower.z * inside as f64 / (n * n) as f64;
        let mut hull = points.iter().map(|p| (p.x, p.z)).collect::<Vec<_>>();
        let c = hull.iter().fold((0.0, 0.0), |c, p| (c.0 + p.0, c.1 + p.1));
        let c = (
            c.0 / hull.len().max(1) as f64,
            c.1 / hull.len().max(1) as f64,
        );
        hull.sort_by(|p, q| {
            (p.1 - c.1)
                .atan2(p.0 - c.0)
                .total_cmp(&(q.1 - c.1).atan2(q.0 - c.0))
        });
        let area: f64 = (0..hull.len())
            .map(|i| {
                let (p, q) = (hull[i], hull[(i + 1) % hull.len()]);
                0.5 * (p.0 * q.1 - q.0 * p.1)
            })
            .sum::<f64>()
            .abs();
        // Grid error: a boundary strip of one cell.
        let cell = lower.x.max(lower.z) / n as f64;
        assert!(
            (area - brute_area).abs() < 4.0 * cell * (lower.x + lower.z) + 1e-9,
            "{area} vs {brute_area}"
        );
    }
}

/// The optimum of a small dense QP by enumerating active sets: every subset of the
/// inequalities taken as equalities, the KKT system solved, the feasible point with
/// non-negative multipliers kept.
fn dense_reference(
    p: &[Vec<f64>],
    q: &[f64],
    eq: &[(Vec<f64>, f64)],
    le: &[(Vec<f64>, f64)],
) -> Option<Vec<f64>> {
    let n = q.len();
    let mut best: Option<(f64, Vec<f64>)> = None;
    for mask in 0..(1u32 << le.len()) {
        let active: Vec<&(Vec<f64>, f64)> = eq
            .iter()
            .chain((0..le.len()).filter(|k| mask >> k & 1 == 1).map(|k| &le[k]))
            .collect();
        let m = active.len();
        let size = n + m;
        let mut a = vec![vec![0.0; size + 1]; size];
        for i in 0..n {
            for j in 0..n {
                a[i][j] = p[i][j];
            }
            a[i][size] = -q[i];
        }
        for (r, (row, rhs)) in active.iter().enumerate() {
            for j in 0..n {
                a[n + r][j] = row[j];
                a[j][n + r] = row[j];
            }
            a[n + r][size] = *rhs;
        }
        let Some(x) = gauss(a) else { continue };
        let feasible = le
            .iter()
            .all(|(row, rhs)| row.iter().zip(&x).map(|(r, x)| r * x).sum::<f64>() <= rhs + 1e-9);
        let multipliers_ok = (eq.len()..m).all(|r| x[n + r] >= -1e-9);
        if feasible && multipliers_ok {
            let f: f64 = (0..n)
                .map(|i| 0.5 * x[i] * (0..n).map(|j| p[i][j] * x[j]).sum::<f64>() + q[i] * x[i])
                .sum();
            if best.as_ref().is_none_or(|b| f < b.0) {
                best = Some((f, x[..n].to_vec()));
            }
        }
    }
    best.map(|b| b.1)
}

fn gauss(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let n = a.len();
    for c in 0..n {
        let pivot = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[pivot][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, pivot);
        for r in 0..n {
            if r != c {
                let f = a[r][c] / a[c][c];
                let pivot_row = a[c].clone();
                for (x, y) in a[r].iter_mut().zip(&pivot_row).skip(c) {
                    *x -= f * y;
                }
            }
        }
    }
    Some((0..n).map(|i| a[i][n] / a[i][i]).collect())
}

#[test]
fn the_qp_solver_agrees_with_a_dense_reference_and_detects_infeasibility() {
    let mut rng = Rng(17);
    let (mut worst, mut solved): (f64, usize) = (0.0, 0);
    for _ in 0..40 {
        let n = 4;
        let l: Vec<Vec<f64>> = (0..n)
            .map(|_| (0..n).map(|_| rng.range(-1.0, 1.0)).collect())
            .collect();
        let p: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        (0..n).map(|k| l[i][k] * l[j][k]).sum::<f64>()
                            + if i == j { 0.5 } else { 0.0 }
                    })
                    .collect()
            })
            .collect();
        let q: Vec<f64> = (0..n).map(|_| rng.range(-3.0, 3.0)).collect();
        let eq = vec![(
            (0..n).map(|_| rng.range(-1.0, 1.0)).collect::<Vec<f64>>(),
            rng.range(-1.0, 1.0),
        )];
        let le: Vec<(Vec<f64>, f64)> = (0..6)
            .map(|_| {
                (
                    (0..n).map(|_| rng.range(-1.0, 1.0)).collect(),
                    rng.range(0.0, 1.0),
                )
            })
            .collect();
        let mut qp = Qp::new(n);
        for (i, row) in p.iter().enumerate() {
            for (j, &value) in row.iter().enumerate().skip(i) {
                qp.add_hessian(i, j, value);
            }
        }
        qp.linear.copy_from_slice(&q);
        for (row, rhs) in &eq {
            qp.equal(row.iter().copied().enumerate().collect(), *rhs);
        }
        for (row, rhs) in &le {
            qp.at_most(row.iter().copied().enumerate().collect(), *rhs);
        }
        match dense_reference(&p, &q, &eq, &le) {
            Some(reference) => {
                solved += 1;
                let x = qp.solve().expect("solved");
                for (a, b) in x.iter().zip(&reference) {
                    worst = worst.max((a - b).abs());
                }
            }
            None => assert_eq!(qp.solve(), Err(QpFailure::Infeasible)),
        }
    }
    assert!(solved > 20, "{solved} feasible problems");
    // Measured: the interior-point solution agrees to 9.3e-8 here.
    assert!(worst < 1e-6, "largest difference {worst}");
    let mut infeasible = Qp::new(2);
    infeasible.add_hessian(0, 0, 1.0);
    infeasible.add_hessian(1, 1, 1.0);
    infeasible.at_least(vec![(0, 1.0), (1, 1.0)], 1.0);
    infeasible.at_most(vec![(0, 1.0)], 0.0);
    infeasible.at_most(vec![(1, 1.0)], 0.0);
    assert_eq!(infeasible.solve(), Err(QpFailure::Infeasible));
}

fn body(name: &str, shape: BodyShape, position: DVec3, motion: BodyMotion) -> BodySpec {
    BodySpec {
        name: name.into(),
        shape,
        density: 0.8,
        position,
        orientation: DQuat::IDENTITY,
        velocity: DVec3::ZERO,
        angular_velocity: DVec3::ZERO,
        motion,
        shell: ShellMaterial::default(),
    }
}

fn cube(name: &str, side: f64, position: DVec3) -> BodySpec {
    body(
        name,
        BodyShape::Box {
            size: DVec3::splat(side),
        },
        position,
        BodyMotion::Dynamic,
    )
}

fn floor() -> BodySpec {
    body(
        "floor",
        BodyShape::Box {
            size: DVec3::new(100.0, 2.0, 100.0),
        },
        DVec3::new(0.0, -1.0, 0.0),
        BodyMotion::Fixed,
    )
}

fn oba_scene(bodies: Vec<BodySpec>, gravity: DVec3, oba: ObaSettings) -> Scene {
    let mut scene = Scene {
        name: "test".into(),
        duration: 20.0,
        frame_interval: 1.0 / 30.0,
        gravity,
        ..Scene::default()
    };
    scene.integrator.method = Method::Oba;
    scene.rigid = RigidScene {
        bodies,
        joints: Vec::new(),
        oba,
    };
    scene
}

#[test]
fn a_frictionless_collision_of_free_bodies_keeps_linear_and_angular_momentum() {
    let mut a = cube("a", 2.0, DVec3::new(-1.6, 0.0, 0.0));
    a.velocity = DVec3::new(30.0, 2.0, 0.0);
    a.angular_velocity = DVec3::new(0.5, 1.0, -0.3);
    let mut b = cube("b", 1.5, DVec3::new(1.6, 0.7, 0.4));
    b.orientation = DQuat::from_rotation_z(0.3) * DQuat::from_rotation_x(0.4);
    b.velocity = DVec3::new(-20.0, 0.0, 1.0);
    let oba = ObaSettings {
        friction: 0.0,
        restitution: 1.0,
        ..ObaSettings::default()
    };
    let scene = oba_scene(vec![a, b], DVec3::ZERO, oba);
    let mut sim = ObaSimulation::new(&scene).expect("valid");
    sim.run_until(0.5, &mut NoFrames).expect("runs");
    let e = sim.energies();
    let (first, last) = (e[0], *e.last().expect("frames"));
    assert!(sim.stats().totals.collisions > 0, "the bodies met");
    let scale = first.momentum.length();
    // Measured: 5e-16 relative.
    assert!((last.momentum - first.momentum).length() < 1e-6 * scale);
    // Angular momentum across the impulses themselves (the position update moves the bodies
    // apart without changing their velocities, which moves x x m v): two touching bodies
    // approaching with spin, one QP.
    let mut bodies: Vec<Body> = scene.rigid.bodies.iter().map(Body::new).collect();
    bodies[0].pose = Pose::new(DVec3::ZERO, DQuat::IDENTITY);
    bodies[1].pose = Pose::new(DVec3::new(1.75 + 1e-3, 0.3, 0.2), DQuat::IDENTITY);
    let world = World {
        parts: vec![(0, 0), (1, 0)],
        joints: Vec::new(),
        settings: scene.rigid.oba.clone(),
    };
    let parts = world.pose_parts(&bodies, &[bodies[0].pose, bodies[1].pose]);
    let s = separation(&parts[0], &parts[1]);
    let contacts: Vec<Contact> = contact_points(&parts[0], &parts[1], s.normal, 1e-2)
        .into_iter()
        .map(|point| Contact {
            bodies: (0, 1),
            point,
            normal: s.normal,
            tangents: tangent_frame(s.normal),
        })
        .collect();
    assert!(!contacts.is_empty());
    let angular = |bodies: &[Body]| -> DVec3 {
        bodies
            .iter()
            .map(|b| {
                b.pose.position.cross(b.mass * b.velocity) + b.world_inertia() * b.angular_velocity
            })
            .sum()
    };
    let linear = |bodies: &[Body]| -> DVec3 { bodies.iter().map(|b| b.mass * b.velocity).sum() };
    let (l0, p0) = (angular(&bodies), linear(&bodies));
    let outcome = impulses::solve(&world, &mut bodies, &contacts, &[true, true], 1.0, 0.0);
    assert_eq!(outcome.projections + outcome.skipped, 0);
    let (l1, p1) = (angular(&bodies), linear(&bodies));
    assert!(
        contacts.iter().all(|c| c.normal_velocity(&bodies) >= -1e-6),
        "bounced"
    );
    // Measured: 1.9e-15 (angular) and 2.6e-17 (linear) relative.
    assert!((l1 - l0).length() < 1e-7 * l0.length(), "{l0} -> {l1}");
    assert!((p1 - p0).length() < 1e-7 * p0.length(), "{p0} -> {p1}");
}

#[test]
fn the_restitution_zero_qp_never_raises_kinetic_energy() {
    let mut rng = Rng(23);
    for coupling in [FrictionCoupling::Staggered, FrictionCoupling::Thesis] {
        for _ in 0..6 {
            let mut bodies = vec![floor()];
            for k in 0..4 {
                let mut c = cube(
                    &format!("c{k}"),
                    2.0,
                    DVec3::new(
                        rng.range(-0.2, 0.2) + 3.0 * k as f64 - 4.5,
                        1.0 + 1e-2,
                        rng.range(-0.2, 0.2),
                    ),
                );
                c.velocity = rng.vec(40.0) - DVec3::new(0.0, 40.0, 0.0);
                c.angular_velocity = rng.vec(3.0);
                bodies.push(c);
            }
            let oba = ObaSettings {
                restitution: 0.0,
                friction: 0.5,
                friction_coupling: coupling,
                sequential_collisions: Some(0),
                ..ObaSettings::default()
            };
            let mut sim = ObaSimulation::new(&oba_scene(bodies, DVec3::ZERO, oba)).expect("valid");
            let mut before = sim.energies()[0].kinetic;
            for frame in 1..8 {
                sim.run_until(frame as f64 / 30.0, &mut NoFrames)
                    .expect("runs");
                let after = sim.energies().last().expect("a frame").kinetic;
                assert!(
                    after <= before * (1.0 + 1e-6) + 1e-6,
                    "{coupling:?}: {before} -> {after}"
                );
                before = after;
            }
        }
    }
}

#[test]
fn a_resting_stack_of_ten_cubes_stays_put_for_600_frames() {
    let mut bodies = vec![floor()];
    for k in 0..10 {
        bodies.push(cube(
            &format!("c{k}"),
            10.0,
            DVec3::new(0.0, 5.0 + 10.001 * k as f64 + 1e-3, 0.0),
        ));
    }
    let start: Vec<DVec3> = bodies.iter().map(|b| b.position).collect();
    let mut sim = ObaSimulation::new(&oba_scene(
        bodies,
        DVec3::new(0.0, -981.0, 0.0),
        ObaSettings::default(),
    ))
    .expect("valid");
    let mut audit = Audited(acm::check::AuditReport::new());
    sim.run_until(20.0, &mut audit).expect("runs");
    assert_eq!(audit.0.frames, 601);
    assert_eq!(audit.0.intersecting_pairs, 0);
    let drift = sim
        .bodies()
        .iter()
        .zip(&start)
        .map(|(b, s)| b.pose.position.distance(*s))
        .fold(0.0, f64::max);
    // Stated tolerance: 0.01 cm (a thousandth of a cube) over 600 frames; measured 1.5e-5 cm.
    assert!(drift < 1e-2, "a cube moved {drift} cm");
    assert!(sim.stats().min_separation > 0.0);
}

#[test]
fn newtons_cradle_passes_the_momentum_down_the_row() {
    let r = 2.0;
    let mut bodies = vec![body(
        "bar",
        BodyShape::Box {
            size: DVec3::new(30.0, 1.0, 2.0),
        },
        DVec3::new(0.0, 31.0, 0.0),
        BodyMotion::Fixed,
    )];
    let mut joints = Vec::new();
    for k in 0..5 {
        let x = (k as f64 - 2.0) * (2.0 * r + 0.002);
        let mut ball = body(
            &format!("ball{k}"),
            BodyShape::Sphere {
                radius: r,
                subdivisions: 1,
            },
            DVec3::new(x, 10.0, 0.0),
            BodyMotion::Dynamic,
        );
        if k == 0 {
            // Pulled aside 30 degrees about its pivot.
            let pivot = DVec3::new(x, 30.0, 0.0);
            let angle = -30f64.to_radians();
            ball.position = pivot + DQuat::from_rotation_z(angle) * DVec3::new(0.0, -20.0, 0.0);
        }
        joints.push(JointSpec {
            bodies: [k + 1, 0],
            point: DVec3::new(x, 30.0, 0.0),
        });
        bodies.push(ball);
    }
    let oba = ObaSettings {
        restitution: 1.0,
        friction: 0.0,
        steps_per_frame: 4,
        ..ObaSettings::default()
    };
    let mut scene = oba_scene(bodies, DVec3::new(0.0, -981.0, 0.0), oba);
    scene.rigid.joints = joints;
    let mut sim = ObaSimulation::new(&scene).expect("valid");
    let mut audit = Audited(acm::check::AuditReport::new());
    // The first ball swings down in a quarter period (about 0.23 s) and strikes.
    let mut struck = None;
    for frame in 1..20 {
        sim.run_until(frame as f64 / 30.0, &mut audit)
            .expect("runs");
        let speeds: Vec<f64> = sim.bodies()[1..].iter().map(|b| b.velocity.x).collect();
        if speeds[4] > 0.0 && speeds[4] > 10.0 * speeds[0].abs() {
            struck = Some(speeds);
            break;
        }
    }
    let speeds = struck.expect("the last ball left");
    // The last ball carries the momentum; the middle ones barely move (measured: 71.7 cm/s
    // against 0.07 cm/s).
    for s in &speeds[1..4] {
        assert!(s.abs() < 0.1 * speeds[4], "{speeds:?}");
    }
    assert_eq!(audit.0.intersecting_pairs, 0);
}

/// Largest upward speed of a box sliding along a floor with friction.
fn sliding_hop(coupling: FrictionCoupling) -> f64 {
    let mut b = cube("box", 2.0, DVec3::new(0.0, 1.0 + 5e-4, 0.0));
    b.velocity = DVec3::new(100.0, 0.0, 0.0);
    let oba = ObaSettings {
        friction: 0.3,
        restitution: 0.0,
        friction_coupling: coupling,
        ..ObaSettings::default()
    };
    let mut sim = ObaSimulation::new(&oba_scene(
        vec![floor(), b],
        DVec3::new(0.0, -981.0, 0.0),
        oba,
    ))
    .expect("valid");
    let mut hop: f64 = 0.0;
    for frame in 1..10 {
        sim.run_until(frame as f64 / 30.0, &mut NoFrames)
            .expect("runs");
        hop = hop.max(sim.bodies()[1].pose.position.y - (1.0 + 5e-4));
    }
    hop
}

#[test]
fn the_minimum_energy_impulse_makes_a_sliding_box_hop_and_staggered_friction_does_not() {
    let thesis = sliding_hop(FrictionCoupling::Thesis);
    let staggered = sliding_hop(FrictionCoupling::Staggered);
    // Measured at 100 cm/s, mu = 0.3: the thesis's single QP lifts the box 0.78 cm (it leaves
    // the floor at mu u / (1 + mu^2) = 27.5 cm/s); the staggered solve 1.1e-3 cm (the gap).
    assert!(thesis > 0.1, "thesis coupling rose {thesis} cm");
    assert!(staggered < 2e-3, "staggered coupling rose {staggered} cm");
}

/// Every thesis scene (`profiles/oba_*.toml`) through the common driver for its first
/// frames: the method is OBA, no two triangles of any frame intersect (the exact audit), and
/// every close pair stayed apart in the run.
#[test]
fn the_thesis_scenes_start_overlap_free_through_the_common_driver() {
    for (name, frames) in [
        ("stack", 6),
        ("cs_stack", 6),
        ("cubejam", 2),
        ("wall", 3),
        ("jacks", 2),
        ("pendulum", 6),
        ("office_toy", 6),
        ("sphereglass", 2),
        ("cubeglass", 2),
    ] {
        let path = common::profiles_dir().join(format!("oba_{name}.toml"));
        let scene = acm::scene::profile::load(&path, &[]).expect("the profile loads");
        let mut stepper = acm::driver(scene).expect("the scene builds");
        assert_eq!(stepper.method(), Method::Oba);
        let mut audit = Audited(acm::check::AuditReport::new());
        let until = (frames - 1) as f64 * stepper.model().frame_interval();
        stepper.run_until(until, &mut audit).expect("runs");
        assert_eq!(audit.0.frames, frames, "{name}");
        assert_eq!(audit.0.intersecting_pairs, 0, "{name}");
        let stats = stepper.stats_json();
        assert_eq!(stats["integrator"], "oba");
        // Null (infinite) while no pair has come close.
        let closest = stats["min_separation"].as_f64().unwrap_or(f64::INFINITY);
        assert!(closest > 0.0, "{name}: closest pair {closest} cm");
    }
}

/// Two cubes falling onto a floor, the second onto the first: a rigid scene every method
/// can run (no spin, no joints, no compound bodies).
const TWO_CUBES: &str = r#"
[scene]
name = "two_cubes"
duration = 0.2
frame_interval = 0.05
gravity = [0.0, -981.0, 0.0]

[integrator]
method = "oba"

[[body]]
name = "floor"
shape = { kind = "box", size = [40.0, 2.0, 40.0] }
fixed = true
translate = [0.0, -1.0, 0.0]

[[body]]
name = "low"
shape = { kind = "box", size = [4.0, 4.0, 4.0] }
translate = [0.0, 2.5, 0.0]

[[body]]
name = "high"
shape = { kind = "box", size = [4.0, 4.0, 4.0] }
translate = [0.5, 8.0, 0.3]
velocity = [0.0, -50.0, 0.0]
"#;

#[test]
fn acm_run_info_check_and_compare_take_rigid_scenes_and_bad_keys_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cubes.toml"), TWO_CUBES).unwrap();
    let ok = |args: &[&str]| {
        let out = common::acm(dir.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let info = ok(&["info", "cubes.toml"]);
    assert!(info.contains("integrator: oba, 3 bodies"), "{info}");
    assert!(info.contains("body \"high\": dynamic"), "{info}");
    ok(&["run", "cubes.toml", "--out", "o"]);
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("o/stats.json")).unwrap())
            .unwrap();
    assert_eq!(stats["integrator"], "oba");
    assert_eq!(stats["frames"], 5);
    assert!(
        stats["totals"]["collisions"].as_u64().unwrap() > 0,
        "{stats}"
    );
    let energy = std::fs::read_to_string(dir.path().join("o/energy.csv")).unwrap();
    assert_eq!(energy.lines().count(), 1 + 5);
    ok(&["check", "o"]);
    // Every method on the same scene: the shells under ACM and the baselines, then OBA; the
    // OBA row's momentum drift is what the floor gave (gravity's share is taken out).
    let table = ok(&["compare", "cubes.toml", "--until", "0.1"]);
    let rows: Vec<&str> = table.lines().skip(2).take(4).collect();
    for (row, name) in rows.iter().zip(["acm", "sync", "implicit", "oba"]) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[0], name, "{table}");
    }
    for row in &rows {
        let cells: Vec<&str> = row.split_whitespace().collect();
        let n = cells.len();
        // Simulated time, frames and intersecting pairs.
        assert_eq!(cells[n - 8..n - 5], ["0.1000", "3", "0"], "{table}");
    }
    assert!(!table.contains("stopped early"), "{table}");
    // A misspelt rigid key, and a value out of range: exit 2 naming the file, line and key.
    for (from, to, says) in [
        (
            "translate = [0.5",
            "translat = [0.5",
            "unknown field `translat`",
        ),
        (
            "size = [4.0, 4.0, 4.0] }\ntranslate = [0.5",
            "size = [4.0, -4.0, 4.0] }\ntranslate = [0.5",
            "body[2].shape.size.y (body \"high\"): must be finite and > 0",
        ),
        (
            "velocity = [0.0, -50.0, 0.0]",
            "replicate = { count = [2, 0, 1], spacing = [5.0, 0.0, 0.0] }",
            "body[2].replicate.count",
        ),
    ] {
        std::fs::write(dir.path().join("bad.toml"), TWO_CUBES.replace(from, to)).unwrap();
        let out = common::acm(dir.path(), &["run", "bad.toml", "--out", "b"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("bad.toml:"), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
    let out = common::acm(
        dir.path(),
        &["run", "cubes.toml", "--set", "oba.friction=-1"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("oba.friction: must be finite and >= 0"),
        "{stderr}"
    );
}

#[test]
fn compare_takes_gravity_out_of_the_momentum_drift_of_falling_bodies() {
    let mut cube = cube("cube", 2.0, DVec3::new(0.0, 10.0, 0.0));
    cube.velocity = DVec3::new(3.0, 0.0, 0.0);
    let scene = oba_scene(
        vec![cube],
        DVec3::new(0.0, -981.0, 0.0),
        ObaSettings::default(),
    );
    let rows = acm::compare::compare(&scene, 0.1);
    let oba = rows
        .iter()
        .find(|r| r.integrator == "oba")
        .expect("an oba row");
    assert_eq!(oba.frames, 4);
    // Gravity gives 6.3e2 g cm/s of momentum here; measured drift 0.
    assert!(oba.momentum_drift < 1e-9, "{}", oba.momentum_drift);
    assert!(oba.stopped.is_none(), "{:?}", oba.stopped);
}

/// [`TWO_CUBES`] with a scripted press coming down on the low cube in place of the high one:
/// no overlap-free poses exist.
fn squeeze() -> String {
    let (head, _) = TWO_CUBES
        .split_once("[[body]]\nname = \"high\"")
        .expect("the high cube's table");
    format!(
        "{head}[[body]]\nname = \"press\"\nshape = {{ kind = \"box\", size = [20.0, 1.0, 20.0] }}\n\
         translate = [0.0, 5.1, 0.0]\nscript = [{{ time = 0.0, velocity = [0.0, -30.0, 0.0] }}]\n"
    )
}

#[test]
fn a_scripted_press_that_crushes_a_body_stops_the_run_with_exit_2_and_no_bad_frame() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("squeeze.toml"), squeeze()).unwrap();
    let out = common::acm(dir.path(), &["run", "squeeze.toml", "--out", "o"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("optimization-based method failed at t = 0 s"),
        "{stderr}"
    );
    assert!(stderr.contains(r#"bodies "low" and "press""#), "{stderr}");
    // The frame at t = 0 was written, and it is clean.
    let check = common::acm(dir.path(), &["check", "o"]);
    assert!(check.status.success());
    let report: serde_json::Value =
        serde_json::from_slice(&check.stdout).expect("the audit's JSON");
    assert_eq!(report["frames"], 1);
    assert_eq!(report["intersecting_pairs"], 0);
}
