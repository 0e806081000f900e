//! Scenes built in code: [`Scene::builder`] and the placement helpers of [`SceneObject`].

use glam::{DQuat, DVec3};

use super::description::Scene;
use super::error::SceneError;
use super::objects::{Material, SceneObject, ScriptSpec, VertexSet};
use crate::mesh::TriMesh;

impl Scene {
    /// Starts a scene called `name` with the defaults of [`Scene::default`] (1 s, 25 frames a
    /// second, gravity -981 cm/s² along y), contact on as in a profile.
    ///
    /// ```
    /// use acm::prelude::*;
    /// use acm::scene::SceneObject;
    ///
    /// let sheet = acm::mesh::sheet(8, 8, 10.0, 10.0)?;
    /// let scene = Scene::builder("drop")
    ///     .duration(0.5)
    ///     .object(SceneObject::new("sheet", sheet).translated(DVec3::new(0.0, 5.0, 0.0)))
    ///     .pin(0, [0])
    ///     .build()?;
    /// assert_eq!(scene.vertex_count(), 64);
    /// # Ok::<(), acm::Error>(())
    /// ```
    pub fn builder(name: impl Into<String>) -> SceneBuilder {
        let mut scene = Scene {
            name: name.into(),
            ..Scene::default()
        };
        scene.contact.enabled = true;
        SceneBuilder { scene }
    }
}

/// A [`Scene`] under construction: each call sets one thing, [`Self::build`] checks them all.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct SceneBuilder {
    scene: Scene,
}

impl SceneBuilder {
    /// Simulated time (s).
    pub fn duration(mut self, seconds: f64) -> Self {
        self.scene.duration = seconds;
        self
    }

    /// Time between frames (s).
    pub fn frame_interval(mut self, seconds: f64) -> Self {
        self.scene.frame_interval = seconds;
        self
    }

    /// Gravity (cm/s²).
    pub fn gravity(mut self, gravity: DVec3) -> Self {
        self.scene.gravity = gravity;
        self
    }

    /// Adds an object; objects are numbered in the order they are added, from 0.
    pub fn object(mut self, object: SceneObject) -> Self {
        self.scene.objects.push(object);
        self
    }

    /// Holds `vertices` (local indices) of object `object` where they are: a scripted motion
    /// with one key at rest, which [`crate::Simulation::set_velocity`] can later steer.
    pub fn pin(mut self, object: usize, vertices: impl IntoIterator<Item = u32>) -> Self {
        self.scene.scripts.push(ScriptSpec {
            set: VertexSet {
                object,
                vertices: vertices.into_iter().collect(),
            },
            keys: vec![(0.0, DVec3::ZERO)],
        });
        self
    }

    /// Any other setting, on the scene itself (contact, integrator, speed, forces, ...).
    pub fn with(mut self, set: impl FnOnce(&mut Scene)) -> Self {
        set(&mut self.scene);
        self
    }

    /// The scene, once every value is in range and no two triangles intersect at the start.
    ///
    /// # Errors
    /// [`SceneError`] naming the field or element at fault (`Scene::validate`).
    pub fn build(self) -> Result<Scene, SceneError> {
        self.scene.validate()?;
        Ok(self.scene)
    }
}

impl SceneObject {
    /// A free object made of `mesh` as it is, with the default [`Material`], at rest.
    pub fn new(name: impl Into<String>, mesh: TriMesh) -> Self {
        Self {
            name: name.into(),
            mesh,
            material: Material::default(),
            fixed: false,
            velocity: DVec3::ZERO,
            particle_mass: None,
        }
    }

    /// The object moved by `offset` (cm).
    pub fn translated(mut self, offset: DVec3) -> Self {
        self.mesh = self.mesh.transformed(DVec3::ONE, DQuat::IDENTITY, offset);
        self
    }

    /// The object with `material`.
    pub fn material(mut self, material: Material) -> Self {
        self.material = material;
        self
    }

    /// The object moving at `velocity` (cm/s) at the start.
    pub fn moving(mut self, velocity: DVec3) -> Self {
        self.velocity = velocity;
        self
    }

    /// The object fixed: an obstacle that never moves.
    pub fn fixed(mut self) -> Self {
        self.fixed = true;
        self
    }
}
