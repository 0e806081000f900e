//! The [`Scene`] itself: everything a simulation needs, as plain data.

use glam::DVec3;

use super::error::SceneError;
use super::implicit_settings::ImplicitSettings;
use super::method::Method;
use super::objects::{ForceSpec, SceneObject, ScriptSpec, VertexSet};
use super::settings::{ContactSettings, IntegratorSettings};
use super::speed::SpeedSettings;
use super::speed_limit::SpeedLimit;
use super::sync_settings::SyncSettings;
use super::validate;

/// A complete, self-contained description of a simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    /// Name (used in output and messages).
    pub name: String,
    /// Simulated duration (s).
    pub duration: f64,
    /// Time between output frames (s).
    pub frame_interval: f64,
    /// Gravitational acceleration (cm/s^2).
    pub gravity: DVec3,
    /// Objects.
    pub objects: Vec<SceneObject>,
    /// Pinned vertex sets (never move).
    pub fixed: Vec<VertexSet>,
    /// Scripted vertex sets.
    pub scripts: Vec<ScriptSpec>,
    /// Prescribed forces.
    pub forces: Vec<ForceSpec>,
    /// Integrator settings.
    pub integrator: IntegratorSettings,
    /// Contact settings.
    pub contact: ContactSettings,
    /// Parameters of the synchronous baseline (used when `integrator.method` is `Sync`).
    pub sync: SyncSettings,
    /// Parameters of the implicit integrator (used when `integrator.method` is `Implicit`).
    pub implicit: ImplicitSettings,
    /// The chapter-8 optimizations switched on.
    pub speed: SpeedSettings,
    /// Rigid bodies, their joints and the parameters of optimization-based animation: moved
    /// by `integrator.method = "oba"`, and run as stiff closed shells by the others.
    pub rigid: super::rigid::RigidScene,
}

impl Default for Scene {
    fn default() -> Self {
        Self {
            name: "scene".into(),
            duration: 1.0,
            frame_interval: 1.0 / 25.0,
            gravity: DVec3::new(0.0, -981.0, 0.0),
            objects: Vec::new(),
            fixed: Vec::new(),
            scripts: Vec::new(),
            forces: Vec::new(),
            integrator: IntegratorSettings::default(),
            contact: ContactSettings::default(),
            sync: SyncSettings::default(),
            implicit: ImplicitSettings::default(),
            speed: SpeedSettings::default(),
            rigid: super::rigid::RigidScene::default(),
        }
    }
}

impl Scene {
    /// Checks every value and, when the scene handles contact, that no two triangles sharing no
    /// vertex intersect at the start (the exact test of `acm check`, the guarantee's
    /// precondition); the error names the field (see [`SceneError`]). Every integrator's
    /// constructor calls it.
    pub(crate) fn validate(&self) -> Result<(), SceneError> {
        self.validate_fields()?;
        validate::intersection_free(self)
    }

    /// [`Self::validate`] without the intersection test: every value in range and every index
    /// in bounds (what the profile loader locates in the file).
    pub(crate) fn validate_fields(&self) -> Result<(), SceneError> {
        validate::scene(self)
    }

    /// Index of the object called `name`.
    pub fn object_index(&self, name: &str) -> Option<usize> {
        self.objects.iter().position(|o| o.name == name)
    }

    /// Total number of vertices over all objects.
    pub fn vertex_count(&self) -> usize {
        self.objects.iter().map(|o| o.mesh.positions.len()).sum()
    }

    /// Total number of triangles over all objects.
    pub fn triangle_count(&self) -> usize {
        self.objects.iter().map(|o| o.mesh.triangles.len()).sum()
    }

    /// Whether the chosen integrator keeps surfaces apart (ACM with `[contact]`, or any other
    /// integrator, which always handles collisions): then the start must be intersection-free.
    pub(crate) fn handles_contact(&self) -> bool {
        self.contact.enabled || self.integrator.method != Method::Acm
    }

    /// The fastest speed (cm/s) ACM's contact can resolve in this scene up to its end: a vertex
    /// must take at least ten of the kinetic broad phases' time instants, `1e-9 (1 + t)` s, to
    /// cross `contact.eta1` ([`SpeedLimit`]). Start and scripted velocities are held to it at
    /// load, and a run whose speeds run away past it stops.
    pub(crate) fn resolvable_speed(&self) -> f64 {
        SpeedLimit::of(self).at(0.0)
    }

    /// Number of output frames, counting the frame at time 0.
    pub fn frame_count(&self) -> u64 {
        self.frames_until(self.duration)
    }

    /// How many frames a run from 0 to `t` writes (the frame at 0 included).
    pub fn frames_until(&self, t: f64) -> u64 {
        // `as` saturates: a huge ratio stays huge instead of wrapping to 0.
        ((t / self.frame_interval + 1e-9).floor() as u64).saturating_add(1)
    }

    /// The most frames a scene or a run may have: a frame interval that would give more is
    /// refused as a mistake rather than run for years.
    pub const MAX_FRAMES: u64 = 10_000_000;
}
