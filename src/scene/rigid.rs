//! Rigid bodies in a scene (plain data, validated with field paths like every other key): the
//! bodies, the joints between them and the parameters of optimization-based animation.

use glam::{DQuat, DVec3};

use super::error::SceneError;

/// The shape of a body, in its own frame before placement.
#[derive(Clone, Debug, PartialEq)]
pub enum BodyShape {
    /// A box of full side lengths `size`, centred at the origin.
    Box {
        /// Side lengths (cm).
        size: DVec3,
    },
    /// An exact sphere centred at the origin; tessellated (icosphere) for output only.
    Sphere {
        /// Radius (cm).
        radius: f64,
        /// Icosphere subdivisions of the output surface.
        subdivisions: u32,
    },
    /// Three boxes `length x width x width` crossing at the origin along x, y and z.
    Jack {
        /// Arm span (cm).
        length: f64,
        /// Arm thickness (cm).
        width: f64,
    },
    /// A convex polyhedron given by its closed surface (a convex OBJ, or the convex hull of
    /// one).
    Polyhedron {
        /// Vertices.
        vertices: Vec<DVec3>,
        /// Outward-facing triangles.
        triangles: Vec<[u32; 3]>,
    },
    /// Disjoint convex parts sharing one pose.
    Compound {
        /// `(shape, translation, rotation)` of each part (none of them compound).
        parts: Vec<(BodyShape, DVec3, DQuat)>,
    },
}

/// How a body moves.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum BodyMotion {
    /// Under gravity, contact and joints.
    #[default]
    Dynamic,
    /// Never moves (an obstacle).
    Fixed,
    /// Prescribed: piecewise-constant `(time, velocity, angular velocity)` keys, standing
    /// still before the first.
    Scripted(Vec<(f64, DVec3, DVec3)>),
}

/// Material of a body's surface when a body runs as a stiff closed shell under ACM, the
/// synchronous baseline or implicit contact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShellMaterial {
    /// Edge-spring stiffness (dyn).
    pub stretch: f64,
    /// Hinge stiffness (erg).
    pub bend: f64,
}

impl Default for ShellMaterial {
    fn default() -> Self {
        Self {
            stretch: 1e8,
            bend: 1e6,
        }
    }
}

/// One rigid body.
#[derive(Clone, Debug, PartialEq)]
pub struct BodySpec {
    /// Unique name (also the `o` group in frame files).
    pub name: String,
    /// Shape.
    pub shape: BodyShape,
    /// Density (g/cm^3).
    pub density: f64,
    /// Where the shape's origin is placed.
    pub position: DVec3,
    /// The shape's rotation.
    pub orientation: DQuat,
    /// Initial velocity of the centre of mass (cm/s).
    pub velocity: DVec3,
    /// Initial angular velocity (rad/s).
    pub angular_velocity: DVec3,
    /// Dynamic, fixed or scripted.
    pub motion: BodyMotion,
    /// Shell material under the other integrators.
    pub shell: ShellMaterial,
}

/// A ball joint: a point of two bodies kept together (thesis §6.4).
#[derive(Clone, Debug, PartialEq)]
pub struct JointSpec {
    /// Indices of the two bodies.
    pub bodies: [usize; 2],
    /// The joint's world position at time 0.
    pub point: DVec3,
}

/// The distance-to-target objective of the position update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Objective {
    /// Mass and inertia weighted (eq. 6.7): a heavier body pushes a lighter one.
    #[default]
    Mass,
    /// Diameter weighted (eq. 6.8).
    Diameter,
}

/// How impulses are confined to the friction cone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrictionModel {
    /// The eight-sided pyramid inscribed in the cone (eq. 6.23).
    #[default]
    Pyramid,
    /// The exact cone (a second-order cone constraint).
    Cone,
}

/// How friction and normal impulses are solved together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrictionCoupling {
    /// Friction limits from the normal impulses of a frictionless solve first, then one QP
    /// with those fixed limits: the minimum-energy impulse can no longer buy friction with
    /// normal impulse (no hop).
    #[default]
    Staggered,
    /// The thesis's single QP over normal and friction impulses together (App. A.3.2).
    Thesis,
}

/// A blast: bodies within `radius` of `center` at time `time` get a radial velocity
/// `speed (1 - d / radius)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Blast {
    /// When (s).
    pub time: f64,
    /// Centre.
    pub center: DVec3,
    /// Reach (cm).
    pub radius: f64,
    /// Radial speed at the centre (cm/s).
    pub speed: f64,
}

/// Parameters of optimization-based animation (`[oba]` in profiles).
#[derive(Clone, Debug, PartialEq)]
pub struct ObaSettings {
    /// Steps per frame (the thesis: 1).
    pub steps_per_frame: u32,
    /// Position-update objective.
    pub objective: Objective,
    /// Friction cone approximation.
    pub friction_model: FrictionModel,
    /// Normal and friction impulses solved together or staggered.
    pub friction_coupling: FrictionCoupling,
    /// Coefficient of restitution (thesis: 0.3).
    pub restitution: f64,
    /// Coulomb friction coefficient (thesis: 0.3).
    pub friction: f64,
    /// Collisions resolved one at a time, most negative first, before the momentum QP
    /// (§6.2.2); `None`: the number of dynamic bodies up to 50, else a tenth of the contacts.
    pub sequential_collisions: Option<u32>,
    /// Most QPs of the position update per step.
    pub max_iterations: u32,
    /// A group's position update stops when a step it keeps lowers its distance to the
    /// targets by less than this fraction of it (0: only at convergence or the limit).
    pub min_progress: f64,
    /// The position update of a group with joints also stops at a step it keeps that came
    /// out clean, learnt nothing, reached no bound of its QP, and fell short of its predicted
    /// fall by less than `min_progress` of the distance left: what the next QP could still
    /// gain.
    pub stop_on_accurate_step: bool,
    /// Separation the position update asks of every close pair (cm).
    pub gap: f64,
    /// Pairs closer than this are in contact (cm).
    pub contact_distance: f64,
    /// Bound on each rotation-perturbation component per iteration (rad; thesis 0.1).
    pub rotation_bound: f64,
    /// Freeze a body resting in a cold volume for more than this many steps (§6.7.2).
    pub freeze_after: Option<u32>,
    /// Bounce at a distance (§6.7.1): pairs that the next step would bring nearer than the
    /// gap take part in the momentum update and static contact as virtual contacts.
    pub bounce_at_distance: bool,
    /// Cold volumes `(min, max)`; empty: everywhere.
    pub cold: Vec<(DVec3, DVec3)>,
    /// Blasts.
    pub blasts: Vec<Blast>,
}

impl Default for ObaSettings {
    fn default() -> Self {
        Self {
            steps_per_frame: 1,
            objective: Objective::Mass,
            friction_model: FrictionModel::Pyramid,
            friction_coupling: FrictionCoupling::Staggered,
            restitution: 0.3,
            friction: 0.3,
            sequential_collisions: None,
            max_iterations: 20,
            min_progress: 0.03,
            stop_on_accurate_step: true,
            gap: 1e-3,
            contact_distance: 1e-2,
            rotation_bound: 0.1,
            freeze_after: None,
            bounce_at_distance: false,
            cold: Vec::new(),
            blasts: Vec::new(),
        }
    }
}

/// The rigid part of a scene.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RigidScene {
    /// Bodies.
    pub bodies: Vec<BodySpec>,
    /// Joints.
    pub joints: Vec<JointSpec>,
    /// Method parameters.
    pub oba: ObaSettings,
}

type Result<T = ()> = std::result::Result<T, SceneError>;

fn positive(x: f64, path: &str) -> Result {
    if x.is_finite() && x > 0.0 {
        return Ok(());
    }
    Err(SceneError::new(
        path,
        format!("must be finite and > 0, got {x}"),
    ))
}

fn finite(v: DVec3, path: &str) -> Result {
    if v.is_finite() {
        return Ok(());
    }
    Err(SceneError::new(path, format!("must be finite, got {v}")))
}

impl BodyShape {
    fn validate(&self, path: &str) -> Result {
        match self {
            Self::Box { size } => {
                for (k, axis) in ["x", "y", "z"].iter().enumerate() {
                    positive(size[k], &format!("{path}.size.{axis}"))?;
                }
            }
            Self::Sphere {
                radius,
                subdivisions,
            } => {
                positive(*radius, &format!("{path}.radius"))?;
                if *subdivisions > 5 {
                    return Err(SceneError::new(
                        format!("{path}.subdivisions"),
                        format!("at most 5 (10,242 vertices a sphere), got {subdivisions}"),
                    ));
                }
            }
            Self::Jack { length, width } => {
                positive(*length, &format!("{path}.length"))?;
                positive(*width, &format!("{path}.width"))?;
                if width >= length {
                    return Err(SceneError::new(
                        format!("{path}.width"),
                        format!("must be less than the length {length}, got {width}"),
                    ));
                }
            }
            Self::Polyhedron {
                vertices,
                triangles,
            } => crate::mesh::hull::check_convex(vertices, triangles)
                .map_err(|m| SceneError::new(path.to_string(), m))?,
            Self::Compound { parts } => {
                if parts.is_empty() {
                    return Err(SceneError::new(format!("{path}.parts"), "needs a part"));
                }
                for (k, (shape, t, r)) in parts.iter().enumerate() {
                    let part = format!("{path}.parts[{k}]");
                    if matches!(shape, Self::Compound { .. }) {
                        return Err(SceneError::new(part, "a part cannot be compound"));
                    }
                    finite(*t, &format!("{part}.translate"))?;
                    if !r.is_finite() {
                        return Err(SceneError::new(format!("{part}.rotate"), "must be finite"));
                    }
                    shape.validate(&format!("{part}.shape"))?;
                }
            }
        }
        Ok(())
    }
}

impl RigidScene {
    /// Checks every value and index; errors name the field (`body[3].density`).
    pub(crate) fn validate(&self) -> Result {
        for (i, b) in self.bodies.iter().enumerate() {
            let path = format!("body[{i}]");
            if self.bodies[..i].iter().any(|o| o.name == b.name) {
                return Err(SceneError::new(
                    format!("{path}.name"),
                    format!("{:?} names two bodies; names must be unique", b.name),
                ));
            }
            b.shape.validate(&format!("{path}.shape"))?;
            positive(b.density, &format!("{path}.density"))?;
            finite(b.position, &format!("{path}.translate"))?;
            finite(b.velocity, &format!("{path}.velocity"))?;
            finite(b.angular_velocity, &format!("{path}.angular_velocity"))?;
            positive(b.shell.stretch, &format!("{path}.shell.stretch"))?;
            if !(b.shell.bend.is_finite() && b.shell.bend >= 0.0) {
                return Err(SceneError::new(
                    format!("{path}.shell.bend"),
                    format!("must be finite and >= 0, got {}", b.shell.bend),
                ));
            }
            if let BodyMotion::Scripted(keys) = &b.motion {
                if keys.is_empty() {
                    return Err(SceneError::new(format!("{path}.script"), "needs a key"));
                }
                for (k, (t, v, w)) in keys.iter().enumerate() {
                    let key = format!("{path}.script[{k}]");
                    if !(t.is_finite() && *t >= 0.0) || k > 0 && *t <= keys[k - 1].0 {
                        return Err(SceneError::new(
                            format!("{key}.time"),
                            format!("times must be >= 0 and increasing, got {t}"),
                        ));
                    }
                    finite(*v, &format!("{key}.velocity"))?;
                    finite(*w, &format!("{key}.angular_velocity"))?;
                }
            }
        }
        for (i, j) in self.joints.iter().enumerate() {
            let path = format!("joint[{i}]");
            if j.bodies[0] == j.bodies[1] {
                return Err(SceneError::new(
                    format!("{path}.bodies"),
                    "joins a body to itself",
                ));
            }
            finite(j.point, &format!("{path}.point"))?;
        }
        let o = &self.oba;
        if o.steps_per_frame == 0 {
            return Err(SceneError::new("oba.steps_per_frame", "must be at least 1"));
        }
        if !(0.0..=1.0).contains(&o.restitution) {
            return Err(SceneError::new(
                "oba.restitution",
                format!("must be in [0, 1], got {}", o.restitution),
            ));
        }
        if !(o.friction.is_finite() && o.friction >= 0.0) {
            return Err(SceneError::new(
                "oba.friction",
                format!("must be finite and >= 0, got {}", o.friction),
            ));
        }
        if o.max_iterations == 0 {
            return Err(SceneError::new("oba.max_iterations", "must be at least 1"));
        }
        if !(o.min_progress.is_finite() && (0.0..1.0).contains(&o.min_progress)) {
            return Err(SceneError::new(
                "oba.min_progress",
                format!("must be in [0, 1), got {}", o.min_progress),
            ));
        }
        positive(o.gap, "oba.gap")?;
        positive(o.contact_distance, "oba.contact_distance")?;
        if o.contact_distance <= o.gap {
            return Err(SceneError::new(
                "oba.contact_distance",
                format!(
                    "must exceed oba.gap ({}), or resting pairs would not be in contact; got {}",
                    o.gap, o.contact_distance
                ),
            ));
        }
        positive(o.rotation_bound, "oba.rotation_bound")?;
        for (k, (lo, hi)) in o.cold.iter().enumerate() {
            if !(lo.is_finite() && hi.is_finite() && lo.cmple(*hi).all()) {
                return Err(SceneError::new(
                    format!("oba.cold[{k}]"),
                    format!("min {lo} must be finite and below max {hi}"),
                ));
            }
        }
        for (k, b) in o.blasts.iter().enumerate() {
            let path = format!("oba.blast[{k}]");
            if !(b.time.is_finite() && b.time >= 0.0) {
                return Err(SceneError::new(format!("{path}.time"), "must be >= 0"));
            }
            finite(b.center, &format!("{path}.center"))?;
            positive(b.radius, &format!("{path}.radius"))?;
            if !b.speed.is_finite() {
                return Err(SceneError::new(format!("{path}.speed"), "must be finite"));
            }
        }
        Ok(())
    }
}
