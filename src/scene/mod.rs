//! Scene descriptions: what to simulate, validated before anything runs.
//!
//! A [`Scene`] is plain data that can be built in code (see `examples/embed.rs`) or loaded from a
//! profile file ([`profile`]). [`Scene::validate`] checks every value and names the offending
//! field with a path in profile terms (`object[1].material.density`), so the profile loader can
//! point at the file and line.

mod builder;
mod error;
mod implicit_settings;
mod method;
pub mod profile;
mod speed;
mod speed_limit;
mod sync_settings;
mod validate;

use glam::DVec3;

use crate::mesh::TriMesh;

pub use builder::SceneBuilder;
pub use error::SceneError;
pub use implicit_settings::ImplicitSettings;
pub use method::Method;
pub use speed::SpeedSettings;
pub use speed_limit::SpeedLimit;
pub use sync_settings::{FailSafe, OnUnresolved, SyncSettings};

/// Elastic material of an object (cgs units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material {
    /// Area density (g/cm^2); lumped masses are `density * area / 3` per incident triangle.
    pub density: f64,
    /// Edge-spring stiffness `k_s` (dyn): `V = 0.5 k_s (|e| - L)^2 / L`.
    pub stretch: f64,
    /// Edge-spring damping coefficient (g cm/s), position based.
    pub stretch_damping: f64,
    /// Discrete-shell bending stiffness `k_b` (erg): `V = k_b (theta - theta0)^2 |e0| / h0`.
    pub bend: f64,
    /// Bending damping coefficient (erg s), position based.
    pub bend_damping: f64,
    /// Air drag rate (1/s): a force `-drag * m * v` on every vertex. Unlike the elastic damping
    /// it removes momentum; it lets swinging motion settle.
    pub drag: f64,
}

impl Material {
    /// The material of fixed obstacles and point particles: unit density, no elastic forces.
    pub const INERT: Self = Self {
        density: 1.0,
        stretch: 0.0,
        stretch_damping: 0.0,
        bend: 0.0,
        bend_damping: 0.0,
        drag: 0.0,
    };
}

impl Default for Material {
    fn default() -> Self {
        Self {
            density: 0.001,
            stretch: 1000.0,
            stretch_damping: 1.0,
            bend: 0.1,
            bend_damping: 0.0,
            drag: 0.0,
        }
    }
}

/// One object: a triangle mesh, already placed in the world.
#[derive(Clone, Debug, PartialEq)]
pub struct SceneObject {
    /// Unique name (also the `o` group in frame files).
    pub name: String,
    /// The mesh in world coordinates at time 0 (also its rest shape).
    pub mesh: TriMesh,
    /// Material.
    pub material: Material,
    /// A fixed object never moves (an obstacle): no elastic forces, zero inverse mass.
    pub fixed: bool,
    /// Initial velocity of every vertex.
    pub velocity: DVec3,
    /// A point particle of this mass (g): the mesh is a single vertex and no triangle.
    pub particle_mass: Option<f64>,
}

impl SceneObject {
    /// A point particle of mass `mass` at `position`.
    pub fn particle(name: impl Into<String>, position: DVec3, mass: f64) -> Self {
        Self {
            name: name.into(),
            mesh: TriMesh::new(vec![position], Vec::new()),
            material: Material::INERT,
            fixed: false,
            velocity: DVec3::ZERO,
            particle_mass: Some(mass),
        }
    }
}

/// A set of vertices of one object, by local vertex index.
#[derive(Clone, Debug, PartialEq)]
pub struct VertexSet {
    /// Index of the object in [`Scene::objects`].
    pub object: usize,
    /// Local vertex indices (sorted, unique, non-empty).
    pub vertices: Vec<u32>,
}

/// A constant force on each vertex of a set during `[start, end)`.
#[derive(Clone, Debug, PartialEq)]
pub struct ForceSpec {
    /// The vertices pulled.
    pub set: VertexSet,
    /// Force per vertex (dyn).
    pub force: DVec3,
    /// Start time (s).
    pub start: f64,
    /// End time (s), possibly infinite.
    pub end: f64,
}

/// Scripted vertices: their velocity is prescribed, piecewise constant.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptSpec {
    /// The vertices moved.
    pub set: VertexSet,
    /// `(time, velocity)` keys, strictly increasing in time.
    pub keys: Vec<(f64, DVec3)>,
}

/// Integrator settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntegratorSettings {
    /// Safety factor `c` in `(0, 1]` applied to every stable clock.
    pub safety: f64,
    /// One clock for every force event, overriding the stable clocks (for tests and comparisons
    /// with synchronous integrators). The user is responsible for its stability.
    pub clock: Option<f64>,
    /// Which integrator runs the scene: ACM's event loop or the synchronous baseline.
    pub method: Method,
}

impl Default for IntegratorSettings {
    fn default() -> Self {
        Self {
            method: Method::Acm,
            safety: 0.5,
            clock: None,
        }
    }
}

/// Contact parameters (discrete penalty layers, thesis ch. 4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactSettings {
    /// Whether contact is simulated.
    pub enabled: bool,
    /// Thickness of the first penalty layer, `eta(1)` (cm).
    pub eta1: f64,
    /// Stiffness of the first penalty layer, `r(1)`.
    pub r1: f64,
    /// Coefficient of restitution in `[0, 1]`.
    pub cor: f64,
    /// Friction coefficient `mu >= 0`.
    pub friction: f64,
    /// Cap friction so it never reverses the relative sliding velocity (off in the thesis).
    pub friction_cap: bool,
    /// Layer thickness law `eta(l) = eta1 * l^(-eta_exponent)` (thesis: 1/4).
    pub eta_exponent: f64,
    /// Layer stiffness law `r(l) = r1 * l^r_exponent` (thesis: 3).
    pub r_exponent: f64,
    /// Safety factor of the layer clocks `h(l) = safety * sqrt(m_min / r(l))`, in `(0, 1]`.
    /// The layer ticks' energy error per impact grows with it (about 0.2% at 0.05, 5-50% at
    /// 0.5); [`Self::work_closure`] takes it out for elastic contact.
    pub safety: f64,
    /// How the layer clocks follow the layer stiffnesses (default: the thesis rule).
    pub clocks: crate::penalty::layers::LayerClocks,
    /// With `cor = 1`, whenever a pair is found outside its outermost layer at a layer tick,
    /// give it the normal impulse that takes out the net work its layer ticks did since it was
    /// last outside (the layers' potential, zero there, did none); see the README's known
    /// limitations. Off: the thesis's ticks alone.
    pub work_closure: bool,
    /// With [`Self::work_closure`]: also take out the error each layer impulse makes in the
    /// ticks of the other forces on its vertices (springs, hinges, gravity), which a kick
    /// between two of a force's ticks puts out of step with the force's potential.
    pub closure_forces: bool,
    /// With [`Self::work_closure`] and `cor = 1`: when two objects part, take out of their
    /// motion the work their pairs' closing impulses could not take out of the pairs' own
    /// (an impulse equal and opposite on the two, spread over each as on a rigid body).
    pub closure_objects: bool,
    /// With [`Self::work_closure`] and `0 < cor < 1`: close partly elastic contact too,
    /// against the work of the exact biphasic layers along the distances at the pair's ticks.
    pub closure_restitution: bool,
    /// The broad phase finding candidate pairs (default: the kinetic 18-DOP separation list).
    pub broad_phase: crate::kds::BroadPhaseKind,
    /// When penalty layers are found to be needed: by kinetic certificates ahead of time, or
    /// by speculative windows checked afterwards (default: the certificates).
    pub scheduler: ContactScheduler,
}

/// How the contact subsystem finds the layers a pair needs (`contact.scheduler`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ContactScheduler {
    /// Kinetic data structures (thesis §5.3): a separation slab per candidate pair, re-timed
    /// after every kick, switches a layer on when it fails.
    #[default]
    Kds,
    /// Speculative windows (Ainsley et al. 2012): every force and active layer runs through a
    /// window without certificates, the recorded trajectories are checked afterwards for pairs
    /// that came within a layer's activation distance, and the window is run again with those
    /// layers on until it is clean.
    Speculative,
}

impl ContactSettings {
    /// The layer schedule, or why it is not a barrier.
    pub fn schedule(&self) -> Result<crate::penalty::layers::LayerSchedule, SceneError> {
        use crate::penalty::layers::{LayerLaw, LayerSchedule};
        let law = if self.eta_exponent == 0.25 && self.r_exponent == 3.0 {
            LayerLaw::Thesis
        } else {
            LayerLaw::Power {
                eta_exponent: self.eta_exponent,
                r_exponent: self.r_exponent,
            }
        };
        LayerSchedule::new(self.eta1, self.r1, law).map_err(|e| {
            let path = match e.field {
                "contact.layer_law" => "contact.r_exponent",
                other => other,
            };
            SceneError::new(path, e.reason)
        })
    }
}

impl Default for ContactSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            eta1: 0.1,
            r1: 1000.0,
            cor: 0.0,
            friction: 0.0,
            friction_cap: false,
            eta_exponent: 0.25,
            r_exponent: 3.0,
            safety: 0.5,
            clocks: crate::penalty::layers::LayerClocks::Thesis,
            work_closure: true,
            closure_forces: true,
            closure_objects: true,
            closure_restitution: false,
            broad_phase: crate::kds::BroadPhaseKind::Kdop18,
            scheduler: ContactScheduler::Kds,
        }
    }
}

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
    pub rigid: crate::rigid::RigidScene,
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
            rigid: crate::rigid::RigidScene::default(),
        }
    }
}

impl Scene {
    /// Checks every value and, when the scene handles contact, that no two triangles sharing no
    /// vertex intersect at the start (the exact test of `acm check`, the guarantee's
    /// precondition); the error names the field (see [`SceneError`]). Every integrator's
    /// constructor calls it.
    pub fn validate(&self) -> Result<(), SceneError> {
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
    pub fn handles_contact(&self) -> bool {
        self.contact.enabled || self.integrator.method != Method::Acm
    }

    /// The fastest speed (cm/s) ACM's contact can resolve in this scene up to its end: a vertex
    /// must take at least ten of the kinetic broad phases' time instants, `1e-9 (1 + t)` s, to
    /// cross `contact.eta1` ([`SpeedLimit`]). Start and scripted velocities are held to it at
    /// load, and a run whose speeds run away past it stops.
    pub fn resolvable_speed(&self) -> f64 {
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
