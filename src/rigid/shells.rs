//! Rigid bodies as triangle-mesh objects: the fixed surfaces an OBA run poses and writes as
//! frames, and the stiff closed shells that ACM, the synchronous baseline and implicit contact
//! run in their place, so one profile runs under every method (`acm compare`).

use glam::DVec3;

use super::body::Body;
use crate::mesh::TriMesh;
use crate::scene::rigid::{BodyMotion, BodyShape};
use crate::scene::{Material, Method, Scene, SceneError, SceneObject, ScriptSpec, VertexSet};

/// The scene of an OBA run's output model: one fixed object per body, its surface at the
/// start pose, in body order; contact off.
pub(crate) fn output_scene(scene: &Scene, bodies: &[Body]) -> Scene {
    let mut model = Scene {
        name: scene.name.clone(),
        duration: scene.duration,
        frame_interval: scene.frame_interval,
        gravity: scene.gravity,
        ..Scene::default()
    };
    model.integrator.method = Method::Oba;
    model.objects = bodies
        .iter()
        .map(|b| SceneObject {
            name: b.name.clone(),
            mesh: posed_surface(b),
            material: Material::INERT,
            fixed: true,
            velocity: DVec3::ZERO,
            particle_mass: None,
        })
        .collect();
    model
}

fn posed_surface(b: &Body) -> TriMesh {
    TriMesh::new(
        b.surface.0.iter().map(|&p| b.pose.apply(p)).collect(),
        b.surface.1.clone(),
    )
}

/// Replaces `scene`'s bodies by stiff closed shells (objects appended after the scene's
/// own): a dynamic body's shell has the body's mass spread over its surface and its shell
/// material; a fixed body's is fixed; a scripted body's vertices follow its linear keys.
/// Contact is turned on, since the shells stand for bodies that collide (a profile written
/// for OBA leaves ACM's `[contact]` out). Bodies that a shell cannot stand for are refused:
/// compound bodies other than jacks (their parts are apart, so their shells would not hold
/// together), spinning starts, scripted rotation, and joints.
pub(crate) fn replace_bodies(scene: &mut Scene) -> Result<(), SceneError> {
    if scene.rigid.bodies.is_empty() {
        return Ok(());
    }
    if !scene.rigid.joints.is_empty() {
        return Err(SceneError::new(
            "joint[0]",
            "joints run under integrator oba only; the other integrators see bodies as separate \
             shells",
        ));
    }
    scene.rigid.validate()?;
    if !scene.rigid.oba.blasts.is_empty() {
        return Err(SceneError::new(
            "oba.blast[0]",
            "blasts run under integrator oba only",
        ));
    }
    scene.contact.enabled = true;
    let specs = std::mem::take(&mut scene.rigid.bodies);
    for (i, spec) in specs.iter().enumerate() {
        let path = format!("body[{i}]");
        if matches!(spec.shape, BodyShape::Compound { .. }) {
            return Err(SceneError::new(
                format!("{path}.shape"),
                "a compound body runs under integrator oba only (its parts are apart, and \
                 shells would not hold them together)",
            ));
        }
        if spec.angular_velocity != DVec3::ZERO {
            return Err(SceneError::new(
                format!("{path}.angular_velocity"),
                "a shell starts with one velocity for all its vertices: spinning bodies run \
                 under integrator oba only",
            ));
        }
        let body = Body::new(spec);
        let mesh = posed_surface(&body);
        let area: f64 = (0..mesh.triangles.len())
            .map(|t| mesh.triangle_area(t))
            .sum();
        let object = scene.objects.len();
        let vertices = (0..mesh.positions.len() as u32).collect();
        scene.objects.push(SceneObject {
            name: spec.name.clone(),
            mesh,
            material: Material {
                density: body.mass / area,
                stretch: spec.shell.stretch,
                stretch_damping: 0.0,
                bend: spec.shell.bend,
                bend_damping: 0.0,
                drag: 0.0,
            },
            fixed: spec.motion == BodyMotion::Fixed,
            velocity: spec.velocity,
            particle_mass: None,
        });
        if let BodyMotion::Scripted(keys) = &spec.motion {
            if keys.iter().any(|k| k.2 != DVec3::ZERO) {
                return Err(SceneError::new(
                    format!("{path}.script"),
                    "scripted rotation runs under integrator oba only: a shell's scripted \
                     vertices move with one velocity",
                ));
            }
            scene.scripts.push(ScriptSpec {
                set: VertexSet { object, vertices },
                keys: keys.iter().map(|k| (k.0, k.1)).collect(),
            });
        }
    }
    Ok(())
}
