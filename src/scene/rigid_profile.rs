//! The profile keys of rigid bodies: `[[body]]`, `[[joint]]` and `[oba]` (documented in
//! `profiles/README.md` and `docs/rigid.md`), turned into a [`RigidScene`] with errors that
//! name the field (`body[2].shape.size.x`), which the profile loader locates in the file.

use std::path::Path;

use glam::{DQuat, DVec3, EulerRot};
use serde::Deserialize;

use super::error::SceneError;
use super::profile::replicate_total;
use super::rigid::{
    Blast, BodyMotion, BodyShape, BodySpec, FrictionCoupling, FrictionModel, JointSpec,
    ObaSettings, Objective, RigidScene, ShellMaterial,
};
use crate::mesh::hull::convex_hull;

/// `[[body]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BodyTable {
    name: String,
    shape: ShapeTable,
    #[serde(default = "wood")]
    density: f64,
    #[serde(default)]
    fixed: bool,
    #[serde(default)]
    translate: [f64; 3],
    /// Degrees about x, then y, then z.
    #[serde(default)]
    rotate: [f64; 3],
    #[serde(default)]
    velocity: [f64; 3],
    #[serde(default)]
    angular_velocity: [f64; 3],
    script: Option<Vec<KeyTable>>,
    replicate: Option<ReplicateTable>,
    shell: Option<ShellTable>,
}

/// The thesis's wood, 0.8 g/cm^3.
fn wood() -> f64 {
    0.8
}

#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum ShapeTable {
    Box {
        size: [f64; 3],
    },
    Sphere {
        radius: f64,
        #[serde(default = "two")]
        subdivisions: u32,
    },
    Jack {
        length: f64,
        width: f64,
    },
    Obj {
        path: String,
        #[serde(default)]
        hull: bool,
    },
    Compound {
        parts: Vec<PartTable>,
    },
}

fn two() -> u32 {
    2
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartTable {
    shape: ShapeTable,
    #[serde(default)]
    translate: [f64; 3],
    #[serde(default)]
    rotate: [f64; 3],
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyTable {
    time: f64,
    #[serde(default)]
    velocity: [f64; 3],
    #[serde(default)]
    angular_velocity: [f64; 3],
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplicateTable {
    count: [usize; 3],
    spacing: [f64; 3],
    #[serde(default)]
    speed: f64,
    #[serde(default)]
    spin: f64,
    #[serde(default)]
    seed: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShellTable {
    stretch: f64,
    bend: f64,
}

/// `[[joint]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JointTable {
    bodies: [String; 2],
    point: [f64; 3],
}

/// `[oba]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct ObaTable {
    steps_per_frame: Option<u32>,
    objective: Option<ObjectiveName>,
    friction_model: Option<FrictionModelName>,
    friction_coupling: Option<CouplingName>,
    restitution: Option<f64>,
    friction: Option<f64>,
    sequential_collisions: Option<u32>,
    max_iterations: Option<u32>,
    min_progress: Option<f64>,
    stop_on_accurate_step: Option<bool>,
    gap: Option<f64>,
    contact_distance: Option<f64>,
    rotation_bound: Option<f64>,
    freeze_after: Option<u32>,
    bounce_at_distance: Option<bool>,
    #[serde(default)]
    cold: Vec<BoxTable>,
    #[serde(default)]
    blast: Vec<BlastTable>,
}

#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum ObjectiveName {
    Mass,
    Diameter,
}

#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum FrictionModelName {
    Pyramid,
    Cone,
}

#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum CouplingName {
    Staggered,
    Thesis,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BoxTable {
    min: [f64; 3],
    max: [f64; 3],
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BlastTable {
    time: f64,
    center: [f64; 3],
    radius: f64,
    speed: f64,
}

/// The rigid scene of a profile's tables, and for each body the `[[body]]` entry it came
/// from; `base` resolves OBJ paths.
pub(crate) fn rigid_scene(
    bodies: Vec<BodyTable>,
    joints: Vec<JointTable>,
    oba: ObaTable,
    base: &Path,
) -> Result<(RigidScene, Vec<usize>), SceneError> {
    let mut specs = Vec::new();
    let mut origin = Vec::new();
    for (i, table) in bodies.into_iter().enumerate() {
        let copies = table.into_bodies(i, base)?;
        origin.extend(std::iter::repeat_n(i, copies.len()));
        specs.extend(copies);
    }
    let mut joint_specs = Vec::new();
    for (i, j) in joints.iter().enumerate() {
        let index = |k: usize| {
            specs
                .iter()
                .position(|b: &BodySpec| b.name == j.bodies[k])
                .ok_or_else(|| {
                    SceneError::new(
                        format!("joint[{i}].bodies"),
                        format!("no body called {:?}", j.bodies[k]),
                    )
                })
        };
        joint_specs.push(JointSpec {
            bodies: [index(0)?, index(1)?],
            point: DVec3::from_array(j.point),
        });
    }
    let d = ObaSettings::default();
    let settings = ObaSettings {
        steps_per_frame: oba.steps_per_frame.unwrap_or(d.steps_per_frame),
        objective: match oba.objective {
            Some(ObjectiveName::Diameter) => Objective::Diameter,
            Some(ObjectiveName::Mass) | None => Objective::Mass,
        },
        friction_model: match oba.friction_model {
            Some(FrictionModelName::Cone) => FrictionModel::Cone,
            Some(FrictionModelName::Pyramid) | None => FrictionModel::Pyramid,
        },
        friction_coupling: match oba.friction_coupling {
            Some(CouplingName::Thesis) => FrictionCoupling::Thesis,
            Some(CouplingName::Staggered) | None => FrictionCoupling::Staggered,
        },
        restitution: oba.restitution.unwrap_or(d.restitution),
        friction: oba.friction.unwrap_or(d.friction),
        sequential_collisions: oba.sequential_collisions,
        max_iterations: oba.max_iterations.unwrap_or(d.max_iterations),
        min_progress: oba.min_progress.unwrap_or(d.min_progress),
        stop_on_accurate_step: oba.stop_on_accurate_step.unwrap_or(d.stop_on_accurate_step),
        gap: oba.gap.unwrap_or(d.gap),
        contact_distance: oba.contact_distance.unwrap_or(d.contact_distance),
        rotation_bound: oba.rotation_bound.unwrap_or(d.rotation_bound),
        freeze_after: oba.freeze_after,
        bounce_at_distance: oba.bounce_at_distance.unwrap_or(d.bounce_at_distance),
        cold: oba
            .cold
            .iter()
            .map(|b| (DVec3::from_array(b.min), DVec3::from_array(b.max)))
            .collect(),
        blasts: oba
            .blast
            .iter()
            .map(|b| Blast {
                time: b.time,
                center: DVec3::from_array(b.center),
                radius: b.radius,
                speed: b.speed,
            })
            .collect(),
    };
    Ok((
        RigidScene {
            bodies: specs,
            joints: joint_specs,
            oba: settings,
        },
        origin,
    ))
}

fn rotation(degrees: [f64; 3]) -> DQuat {
    let [rx, ry, rz] = degrees.map(f64::to_radians);
    DQuat::from_euler(EulerRot::ZYX, rz, ry, rx)
}

impl BodyTable {
    /// The entry's name (its copies add `.k`).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The body, or its copies `name.k` with a `replicate` table: copy
    /// `k = (iz * ny + iy) * nx + ix` is moved by `(ix, iy, iz) * spacing` and gets the body's
    /// velocity plus a random one (components uniform in `[-speed, speed)`) and a random
    /// angular velocity (`[-spin, spin)` rad/s), from `seed`.
    fn into_bodies(self, index: usize, base: &Path) -> Result<Vec<BodySpec>, SceneError> {
        let path = format!("body[{index}]");
        let motion = match (&self.script, self.fixed) {
            (Some(_), true) => {
                return Err(SceneError::new(
                    format!("{path}.script"),
                    "a fixed body cannot be scripted too",
                ))
            }
            (Some(keys), false) => BodyMotion::Scripted(
                keys.iter()
                    .map(|k| {
                        (
                            k.time,
                            DVec3::from_array(k.velocity),
                            DVec3::from_array(k.angular_velocity),
                        )
                    })
                    .collect(),
            ),
            (None, true) => BodyMotion::Fixed,
            (None, false) => BodyMotion::Dynamic,
        };
        let spec = BodySpec {
            name: self.name.clone(),
            shape: self.shape.build(base, &format!("{path}.shape"))?,
            density: self.density,
            position: DVec3::from_array(self.translate),
            orientation: rotation(self.rotate),
            velocity: DVec3::from_array(self.velocity),
            angular_velocity: DVec3::from_array(self.angular_velocity),
            motion,
            shell: self
                .shell
                .as_ref()
                .map_or(ShellMaterial::default(), |s| ShellMaterial {
                    stretch: s.stretch,
                    bend: s.bend,
                }),
        };
        let Some(r) = &self.replicate else {
            return Ok(vec![spec]);
        };
        let [nx, ny, _] = r.count;
        let total = replicate_total(r.count, &format!("{path}.replicate.count"))?;
        for (value, key) in [(r.speed, "speed"), (r.spin, "spin")] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(SceneError::new(
                    format!("{path}.replicate.{key}"),
                    format!("must be finite and >= 0, got {value}"),
                ));
            }
        }
        let spacing = DVec3::from_array(r.spacing);
        let random = |k: usize, slot: usize, scale: f64| {
            DVec3::from_array(std::array::from_fn(|c| {
                scale * (2.0 * crate::mesh::seeded_unit(r.seed, (6 * k + slot + c) as u64) - 1.0)
            }))
        };
        Ok((0..total)
            .map(|k| {
                let cell = DVec3::new(
                    (k % nx) as f64,
                    ((k / nx) % ny) as f64,
                    (k / (nx * ny)) as f64,
                );
                BodySpec {
                    name: format!("{}.{k}", spec.name),
                    position: spec.position + cell * spacing,
                    velocity: spec.velocity + random(k, 0, r.speed),
                    angular_velocity: spec.angular_velocity + random(k, 3, r.spin),
                    ..spec.clone()
                }
            })
            .collect())
    }
}

impl ShapeTable {
    fn build(&self, base: &Path, path: &str) -> Result<BodyShape, SceneError> {
        let v = DVec3::from_array;
        Ok(match self {
            Self::Box { size } => BodyShape::Box { size: v(*size) },
            Self::Sphere {
                radius,
                subdivisions,
            } => BodyShape::Sphere {
                radius: *radius,
                subdivisions: *subdivisions,
            },
            Self::Jack { length, width } => BodyShape::Jack {
                length: *length,
                width: *width,
            },
            Self::Obj { path: file, hull } => {
                let mesh = crate::mesh::read_obj(&base.join(file))
                    .map_err(|e| SceneError::new(format!("{path}.path"), e.to_string()))?;
                if *hull {
                    let (vertices, triangles) = convex_hull(&mesh.positions).ok_or_else(|| {
                        SceneError::new(
                            format!("{path}.path"),
                            "its vertices are coplanar: their hull encloses no volume",
                        )
                    })?;
                    BodyShape::Polyhedron {
                        vertices,
                        triangles,
                    }
                } else {
                    BodyShape::Polyhedron {
                        vertices: mesh.positions,
                        triangles: mesh.triangles,
                    }
                }
            }
            Self::Compound { parts } => BodyShape::Compound {
                parts: parts
                    .iter()
                    .enumerate()
                    .map(|(k, p)| {
                        Ok((
                            p.shape.build(base, &format!("{path}.parts[{k}].shape"))?,
                            v(p.translate),
                            rotation(p.rotate),
                        ))
                    })
                    .collect::<Result<_, SceneError>>()?,
            },
        })
    }
}
