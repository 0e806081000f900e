//! The Python module `acm`: build or load a scene, run it, read positions and velocities as
//! numpy arrays, audit a configuration.
//!
//! ```python
//! import acm
//! sim = acm.Simulation(acm.load("profiles/sheet_on_sphere.toml"))
//! sim.run_until(0.2)
//! x = sim.positions()  # float64, shape (n, 3), cm
//! ```
//!
//! Bad input raises `acm.InputError` (a `ValueError`) with the message the `acm` command prints;
//! a run that stops early raises `acm.RunError` (a `RuntimeError`). The engine runs with the GIL
//! released.

mod arrays;
mod driver;
mod generators;
mod scene;
mod simulation;

use pyo3::prelude::*;

pyo3::create_exception!(
    acm,
    InputError,
    pyo3::exceptions::PyValueError,
    "Bad input: a profile, scene, argument or array that acm cannot use (the message names it)."
);
pyo3::create_exception!(
    acm,
    RunError,
    pyo3::exceptions::PyRuntimeError,
    "A run that stopped early: it diverged, made no progress, or broke an invariant."
);

/// The value of `value` as Python objects (dicts, lists, numbers, strings, `None`), by way of
/// its JSON form: how `stats` and audit reports reach Python with the names of `stats.json`.
fn to_python<'py>(py: Python<'py>, value: &impl serde::Serialize) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_string(value).map_err(|e| RunError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (json,))
}

/// Applies a settings dict (`material=`, `contact=`) to the named fields of `target`: each key
/// sets the field of that name; the error names `what.key`, and lists the fields for an unknown
/// key.
macro_rules! apply_fields {
    ($settings:expr, $what:expr, $target:ident, [$($field:ident),+ $(,)?]) => {{
        let known = [$(stringify!($field)),+];
        let mut result = Ok(());
        for (key, value) in $settings.into_iter().flat_map(|d| d.iter()) {
            let key: String = key.extract()?;
            let applied = match key.as_str() {
                $(stringify!($field) => value.extract().map(|v| $target.$field = v),)+
                _ => {
                    result = Err($crate::InputError::new_err(format!(
                        "{}.{key}: unknown key; expected one of {}",
                        $what,
                        known.join(", ")
                    )));
                    break;
                }
            };
            if let Err(e) = applied {
                result = Err($crate::InputError::new_err(format!(
                    "{}.{key}: {}",
                    $what,
                    e.value(value.py())
                )));
                break;
            }
        }
        result
    }};
}
pub(crate) use apply_fields;

/// Asynchronous Contact Mechanics: cloth and thin shells that never interpenetrate.
///
/// `acm.load(path, set={...})` or `acm.Scene(...)` describes a scene; `acm.Simulation(scene)`
/// runs it (`run_until`, `step`) and reads it back as numpy arrays (`positions`, `velocities`).
/// Units are cgs: cm, g, s.
#[pymodule]
#[pyo3(name = "acm")]
fn acm_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add_class::<scene::Scene>()?;
    m.add_class::<simulation::Simulation>()?;
    m.add_function(wrap_pyfunction!(scene::load, m)?)?;
    m.add_function(wrap_pyfunction!(generators::sheet, m)?)?;
    m.add_function(wrap_pyfunction!(generators::icosphere, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
