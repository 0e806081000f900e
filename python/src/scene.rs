//! `acm.Scene` (built from numpy arrays, or loaded from a profile by `acm.load`).

use std::path::PathBuf;

use acm::mesh::{MeshError, TriMesh};
use acm::scene::{profile, ContactSettings, Material, SceneObject, ScriptSpec, VertexSet};
use glam::DVec3;
use numpy::{AllowTypeChange, PyArrayLike1, PyArrayLike2};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyTuple};

use crate::{apply_fields, arrays, InputError};

/// What to simulate: objects (triangle meshes with a material), pinned and scripted vertex
/// sets, gravity and contact. Units are cgs: cm, g, s.
///
/// `Scene(name="scene", duration=1.0, frame_interval=0.04, gravity=(0, -981, 0), contact=None)`:
/// `contact` is a dict of contact settings (`eta1`, `r1`, `cor`, `friction`, `friction_cap`,
/// `eta_exponent`, `r_exponent`, `safety`, `enabled`), as in a profile's `[contact]` table;
/// without it contact is off. Values are checked when a `Simulation` is built.
#[pyclass(module = "acm")]
#[derive(Clone, Debug)]
pub(crate) struct Scene {
    pub(crate) scene: acm::Scene,
}

impl Scene {
    /// The index of the object called `name`.
    fn object(&self, name: &str) -> PyResult<usize> {
        self.scene
            .object_index(name)
            .ok_or_else(|| InputError::new_err(format!("no object named {name:?}")))
    }

    /// The vertex set `vertices` of object `object`, sorted and without repeats.
    fn set(&self, object: &str, vertices: &Bound<'_, PyAny>) -> PyResult<VertexSet> {
        let object = self.object(object)?;
        let vertices: PyArrayLike1<'_, i64, AllowTypeChange> =
            arrays::integers("vertices", vertices)?.extract()?;
        let mut vertices = arrays::indices("vertices", &vertices)?;
        vertices.sort_unstable();
        vertices.dedup();
        Ok(VertexSet { object, vertices })
    }
}

/// The argument and row a mesh error is about: `object[0].vertices[4]`, `object[0].triangles[7]`,
/// or the object itself.
fn mesh_element(object: &str, e: &MeshError) -> String {
    match *e {
        MeshError::NonFiniteCoordinate { vertex }
        | MeshError::CoordinateTooLarge { vertex, .. } => {
            format!("{object}.vertices[{vertex}]")
        }
        MeshError::IndexOutOfRange { triangle, .. }
        | MeshError::RepeatedVertex { triangle }
        | MeshError::DegenerateTriangle { triangle, .. }
        | MeshError::DuplicateTriangle { triangle, .. } => {
            format!("{object}.triangles[{triangle}]")
        }
        _ => object.to_string(),
    }
}

/// The contact settings of a `contact=` dict: on unless it says `enabled = False`.
fn contact(settings: Option<&Bound<'_, PyDict>>) -> PyResult<ContactSettings> {
    let mut c = ContactSettings {
        enabled: settings.is_some(),
        ..ContactSettings::default()
    };
    apply_fields!(
        settings,
        "contact",
        c,
        [
            enabled,
            eta1,
            r1,
            cor,
            friction,
            friction_cap,
            eta_exponent,
            r_exponent,
            safety,
            work_closure,
            closure_forces,
            closure_restitution
        ]
    )?;
    Ok(c)
}

/// The material of a `material=` dict, from the defaults (density 0.001 g/cm^2, stretch 1000,
/// stretch damping 1, bend 0.1, no bend damping, no drag).
fn material(settings: Option<&Bound<'_, PyDict>>, what: &str) -> PyResult<Material> {
    let mut m = Material::default();
    apply_fields!(
        settings,
        what,
        m,
        [density, stretch, stretch_damping, bend, bend_damping, drag]
    )?;
    Ok(m)
}

#[pymethods]
impl Scene {
    #[new]
    #[pyo3(signature = (name = "scene", duration = 1.0, frame_interval = 0.04, gravity = (0.0, -981.0, 0.0), contact = None))]
    fn new(
        name: &str,
        duration: f64,
        frame_interval: f64,
        gravity: (f64, f64, f64),
        contact: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        Ok(Self {
            scene: acm::Scene {
                name: name.into(),
                duration,
                frame_interval,
                gravity: DVec3::from(gravity),
                contact: self::contact(contact)?,
                ..acm::Scene::default()
            },
        })
    }

    /// Adds an object: `vertices` (n, 3) in cm, `triangles` (m, 3) 0-based integer indices,
    /// counter-clockwise seen from the normal side. `material` is a dict (`density`, `stretch`,
    /// `stretch_damping`, `bend`, `bend_damping`, `drag`); a `fixed` object is an obstacle that
    /// never moves. Returns the object's index. The mesh is checked here (finite coordinates,
    /// indices in range, no degenerate or repeated triangles): `acm.InputError` names the
    /// argument and the row.
    #[pyo3(signature = (name, vertices, triangles, material = None, fixed = false, velocity = (0.0, 0.0, 0.0)))]
    fn add_object(
        &mut self,
        name: &str,
        vertices: PyArrayLike2<'_, f64, AllowTypeChange>,
        triangles: &Bound<'_, PyAny>,
        material: Option<&Bound<'_, PyDict>>,
        fixed: bool,
        velocity: (f64, f64, f64),
    ) -> PyResult<usize> {
        let index = self.scene.objects.len();
        let what = format!("object[{index}]");
        let material = self::material(material, &format!("{what}.material"))?;
        let triangles_what = format!("{what}.triangles");
        let triangles: PyArrayLike2<'_, i64, AllowTypeChange> =
            arrays::integers(&triangles_what, triangles)?.extract()?;
        let mesh = TriMesh::new(
            arrays::points(&format!("{what}.vertices"), &vertices)?,
            arrays::triangles(&triangles_what, &triangles)?,
        );
        mesh.validate()
            .map_err(|e| InputError::new_err(format!("{}: {e}", mesh_element(&what, &e))))?;
        self.scene.objects.push(SceneObject {
            name: name.into(),
            mesh,
            material,
            fixed,
            velocity: DVec3::from(velocity),
            particle_mass: None,
        });
        Ok(index)
    }

    /// Pins `vertices` (local indices) of the object called `object`: they never move.
    fn fix(&mut self, object: &str, vertices: &Bound<'_, PyAny>) -> PyResult<()> {
        let set = self.set(object, vertices)?;
        self.scene.fixed.push(set);
        Ok(())
    }

    /// Scripts `vertices` (local indices) of the object called `object`: from each key
    /// `(time, (vx, vy, vz))` on, in time order, they move with that velocity (cm/s).
    fn script(
        &mut self,
        object: &str,
        vertices: &Bound<'_, PyAny>,
        keys: Vec<(f64, (f64, f64, f64))>,
    ) -> PyResult<()> {
        let set = self.set(object, vertices)?;
        let keys = keys.into_iter().map(|(t, v)| (t, DVec3::from(v))).collect();
        self.scene.scripts.push(ScriptSpec { set, keys });
        Ok(())
    }

    /// The scene's name.
    #[getter]
    fn name(&self) -> &str {
        &self.scene.name
    }

    /// Simulated duration of the profile (s).
    #[getter]
    fn duration(&self) -> f64 {
        self.scene.duration
    }

    /// Time between frames (s).
    #[getter]
    fn frame_interval(&self) -> f64 {
        self.scene.frame_interval
    }

    /// The objects' names, in order.
    #[getter]
    fn objects(&self) -> Vec<String> {
        self.scene.objects.iter().map(|o| o.name.clone()).collect()
    }

    /// Vertices over all objects.
    #[getter]
    fn vertex_count(&self) -> usize {
        self.scene.vertex_count()
    }

    fn __repr__(&self) -> String {
        format!(
            "Scene({:?}: {} objects, {} vertices, {} triangles)",
            self.scene.name,
            self.scene.objects.len(),
            self.scene.vertex_count(),
            self.scene.triangle_count()
        )
    }
}

/// Loads a profile (TOML), as `acm run PROFILE --set KEY=VALUE ...` does: `set` maps profile
/// keys (`"object.sheet.material.bend"`) to values. Without `path`, the built-in default scene.
#[pyfunction]
#[pyo3(signature = (path = None, set = None))]
pub(crate) fn load(path: Option<PathBuf>, set: Option<&Bound<'_, PyDict>>) -> PyResult<Scene> {
    let overrides = set
        .into_iter()
        .flat_map(|d| d.iter())
        .map(|(k, v)| Ok(format!("{}={}", k.extract::<String>()?, toml_value(&v)?)))
        .collect::<PyResult<Vec<_>>>()?;
    let scene = match path {
        Some(path) => profile::load(&path, &overrides),
        None => profile::builtin(&overrides),
    }
    .map_err(|e| InputError::new_err(e.to_string()))?;
    Ok(Scene { scene })
}

/// A Python value written as the command line's `--set` would take it: booleans and numbers
/// as TOML literals, lists and tuples as arrays, strings as they are.
fn toml_value(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if v.is_instance_of::<PyBool>() {
        return Ok(if v.extract()? { "true" } else { "false" }.into());
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let items = v
            .try_iter()?
            .map(|item| toml_value(&item?))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(format!("[{}]", items.join(", ")));
    }
    Ok(v.str()?.to_string())
}
