//! Rigid bodies as the method moves them: mass properties from the shape and density, parts
//! and output surface in the body frame (origin at the centre of mass), and the pose
//! (position, unit quaternion) with linear and angular velocity.

use glam::{DMat3, DQuat, DVec3};

use super::geometry::WorldPart;
use super::shape::{jack_surface, MassProperties, Polytope, Shape};
use crate::scene::rigid::{BodyMotion, BodyShape, BodySpec};

/// A body's position and orientation, with the rotation matrix they imply: every world point
/// of a body (collision vertices and output vertices alike) is `rotation * p + position`, so
/// the audit of written frames sees exactly the points the method kept apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    /// Centre of mass (cm).
    pub position: DVec3,
    /// Orientation.
    pub orientation: DQuat,
    /// `orientation` as a matrix.
    pub rotation: DMat3,
}

impl Pose {
    /// The pose at `position` with `orientation` (normalized).
    pub(crate) fn new(position: DVec3, orientation: DQuat) -> Self {
        let orientation = orientation.normalize();
        Self {
            position,
            orientation,
            rotation: DMat3::from_quat(orientation),
        }
    }

    /// The world position of body-frame point `p`.
    pub(crate) fn apply(&self, p: DVec3) -> DVec3 {
        self.rotation * p + self.position
    }

    /// This pose moved by `dx` and turned by the rotation vector `dphi` (radians) about the
    /// centre of mass.
    pub(crate) fn perturbed(&self, dx: DVec3, dphi: DVec3) -> Self {
        Self::new(
            self.position + dx,
            DQuat::from_scaled_axis(dphi) * self.orientation,
        )
    }
}

/// The rotation vector (axis times angle, radians) that turns `from` into `to`.
pub(crate) fn rotation_between(from: DQuat, to: DQuat) -> DVec3 {
    let mut d = to * from.inverse();
    if d.w < 0.0 {
        d = -d;
    }
    d.to_scaled_axis()
}

/// A closed triangulated surface: vertices and outward triangles.
pub(crate) type Surface = (Vec<DVec3>, Vec<[u32; 3]>);

/// A rigid body.
#[derive(Clone, Debug)]
pub struct Body {
    /// Name.
    pub name: String,
    /// Convex parts in the body frame.
    pub parts: Vec<Shape>,
    /// Output surface in the body frame: vertices and triangles.
    pub surface: Surface,
    /// Mass (g).
    pub mass: f64,
    /// Inertia tensor in the body frame (g cm^2).
    pub inertia: DMat3,
    /// Largest distance between two points of the body (cm), for the objective of eq. 6.8.
    pub diameter: f64,
    /// Largest distance of a point of the body from its centre of mass (cm).
    pub reach: f64,
    /// Dynamic, fixed or scripted.
    pub motion: BodyMotion,
    /// The pose at time 0 (scripted bodies move from it).
    pub start: Pose,
    /// Current pose.
    pub pose: Pose,
    /// Linear velocity (cm/s).
    pub velocity: DVec3,
    /// Angular velocity (rad/s, world frame).
    pub angular_velocity: DVec3,
    /// Frozen (§6.7.2): held still until a collision revives it.
    pub frozen: bool,
    /// Consecutive steps spent at rest against a fixed or frozen body in a cold volume.
    pub rest_steps: u32,
}

impl Body {
    /// Builds the body of `spec`.
    pub(crate) fn new(spec: &BodySpec) -> Self {
        let (parts, surface, props) = build_shape(&spec.shape, spec.density);
        let center = props.center;
        let parts: Vec<Shape> = parts.iter().map(|p| p.shifted(-center)).collect();
        let surface = (
            surface.0.iter().map(|&v| v - center).collect::<Vec<_>>(),
            surface.1,
        );
        let diameter = surface.0.iter().fold(0.0f64, |d, a| {
            surface.0.iter().fold(d, |d, b| d.max(a.distance(*b)))
        });
        let reach = parts.iter().map(Shape::reach).fold(0.0, f64::max);
        let start = Pose::new(spec.position + spec.orientation * center, spec.orientation);
        Self {
            name: spec.name.clone(),
            parts,
            surface,
            mass: props.mass,
            inertia: props.inertia,
            diameter: diameter.max(2.0 * reach),
            reach,
            motion: spec.motion.clone(),
            start,
            pose: start,
            velocity: spec.velocity,
            angular_velocity: spec.angular_velocity,
            frozen: false,
            rest_steps: 0,
        }
    }

    /// Whether forces and contact move the body.
    pub(crate) fn is_dynamic(&self) -> bool {
        self.motion == BodyMotion::Dynamic
    }

    /// The inertia tensor in the world frame, `R I R^T`.
    pub(crate) fn world_inertia(&self) -> DMat3 {
        let r = self.pose.rotation;
        r * self.inertia * r.transpose()
    }

    /// Its inverse.
    pub(crate) fn world_inverse_inertia(&self) -> DMat3 {
        let r = self.pose.rotation;
        r * self.inertia.inverse() * r.transpose()
    }

    /// Kinetic energy (erg).
    pub(crate) fn kinetic_energy(&self) -> f64 {
        let w = self.angular_velocity;
        0.5 * self.mass * self.velocity.length_squared() + 0.5 * w.dot(self.world_inertia() * w)
    }

    /// The velocity of world point `p` of the body.
    pub(crate) fn point_velocity(&self, p: DVec3) -> DVec3 {
        self.velocity + self.angular_velocity.cross(p - self.pose.position)
    }

    /// Part `k` posed at `pose`.
    pub(crate) fn world_part(&self, k: usize, pose: &Pose) -> WorldPart {
        match &self.parts[k] {
            Shape::Polytope(p) => WorldPart {
                vertices: p.vertices.iter().map(|&v| pose.apply(v)).collect(),
                normals: p.normals.iter().map(|&n| pose.rotation * n).collect(),
                edges: p.edges.iter().map(|&e| pose.rotation * e).collect(),
                radius: 0.0,
            },
            Shape::Sphere { center, radius } => WorldPart {
                vertices: vec![pose.apply(*center)],
                normals: Vec::new(),
                edges: Vec::new(),
                radius: *radius,
            },
        }
    }

    /// The pose of a scripted body at time `t` (its keys integrated from the start pose);
    /// other bodies keep their current pose.
    pub(crate) fn scripted_pose(&self, t: f64) -> Pose {
        let BodyMotion::Scripted(keys) = &self.motion else {
            return self.pose;
        };
        let mut pose = self.start;
        for (k, &(start, v, w)) in keys.iter().enumerate() {
            if t <= start {
                break;
            }
            let end = keys.get(k + 1).map_or(t, |next| next.0.min(t));
            pose = pose.perturbed(v * (end - start), w * (end - start));
        }
        pose
    }

    /// A scripted body's velocities at time `t` (the key in force just after `t`).
    pub(crate) fn scripted_velocity(&self, t: f64) -> (DVec3, DVec3) {
        let BodyMotion::Scripted(keys) = &self.motion else {
            return (self.velocity, self.angular_velocity);
        };
        keys.iter()
            .rev()
            .find(|k| k.0 <= t)
            .map_or((DVec3::ZERO, DVec3::ZERO), |k| (k.1, k.2))
    }
}

/// The parts, output surface and mass properties of `shape` (before the centre of mass is
/// moved to the origin).
fn build_shape(shape: &BodyShape, density: f64) -> (Vec<Shape>, Surface, MassProperties) {
    match shape {
        BodyShape::Box { size } => {
            let p = Polytope::cuboid(*size, DVec3::ZERO);
            let props = MassProperties::of_surface(&p.vertices, &p.triangles, density);
            let surface = (p.vertices.clone(), p.triangles.clone());
            (vec![Shape::Polytope(p)], surface, props)
        }
        BodyShape::Sphere {
            radius,
            subdivisions,
        } => {
            let mesh = crate::mesh::icosphere(*radius, *subdivisions)
                .expect("validated radius and subdivisions");
            let props = MassProperties::of_sphere(DVec3::ZERO, *radius, density);
            (
                vec![Shape::Sphere {
                    center: DVec3::ZERO,
                    radius: *radius,
                }],
                (mesh.positions, mesh.triangles),
                props,
            )
        }
        BodyShape::Jack { length, width } => {
            let surface = jack_surface(*length, *width);
            let props = MassProperties::of_surface(&surface.0, &surface.1, density);
            let parts = (0..3)
                .map(|axis| {
                    let mut size = DVec3::splat(*width);
                    size[axis] = *length;
                    Shape::Polytope(Polytope::cuboid(size, DVec3::ZERO))
                })
                .collect();
            (parts, surface, props)
        }
        BodyShape::Polyhedron {
            vertices,
            triangles,
        } => {
            let props = MassProperties::of_surface(vertices, triangles, density);
            let p = Polytope::from_surface(vertices.clone(), triangles.clone());
            (
                vec![Shape::Polytope(p)],
                (vertices.clone(), triangles.clone()),
                props,
            )
        }
        BodyShape::Compound { parts } => {
            let mut shapes = Vec::new();
            let mut props = Vec::new();
            let (mut vertices, mut triangles) = (Vec::new(), Vec::new());
            for (shape, t, r) in parts {
                let (s, (v, tri), m) = build_shape(shape, density);
                let pose = Pose::new(*t, *r);
                let offset = vertices.len() as u32;
                vertices.extend(v.iter().map(|&p| pose.apply(p)));
                triangles.extend(tri.iter().map(|t| t.map(|i| i + offset)));
                shapes.extend(s.into_iter().map(|s| match s {
                    Shape::Polytope(p) => Shape::Polytope(Polytope {
                        vertices: p.vertices.iter().map(|&v| pose.apply(v)).collect(),
                        normals: p.normals.iter().map(|&n| pose.rotation * n).collect(),
                        edges: p.edges.iter().map(|&e| pose.rotation * e).collect(),
                        triangles: p.triangles,
                    }),
                    Shape::Sphere { center, radius } => Shape::Sphere {
                        center: pose.apply(center),
                        radius,
                    },
                }));
                let rotation = pose.rotation;
                props.push(MassProperties {
                    mass: m.mass,
                    center: pose.apply(m.center),
                    inertia: rotation * m.inertia * rotation.transpose(),
                });
            }
            (
                shapes,
                (vertices, triangles),
                MassProperties::combine(&props),
            )
        }
    }
}
