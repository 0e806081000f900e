//! `acm.Simulation`: a running simulation, advanced with the GIL released.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use acm::check::{audit_positions, AuditReport};
use acm::{Frame, FrameSink, FrameSource, RunError};
use glam::DVec3;
use numpy::{AllowTypeChange, PyArray2, PyArrayLike1, PyArrayLike2, PyArrayLikeDyn};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::driver::Driver;
use crate::scene::Scene;
use crate::{arrays, to_python, InputError};

/// A running simulation of a `Scene`, by the method its `integrator.method` names.
///
/// `Simulation(scene, threads=None)` builds it (checking every value of the scene) on a pool of
/// `threads` worker threads (default: one per core; at most 4 per logical core or 64, else
/// `acm.InputError`, a `ValueError`); the output is the same, bit for bit, on any number of
/// threads. Every method runs (`run_until`) and reads back (`positions`, `stats`, ...) the same
/// way; only ACM's event loop also steps one event at a time and is steered (`step`,
/// `set_velocity`), and rigid bodies (`integrator = "oba"`) read back as bodies (`bodies`).
#[pyclass(module = "acm")]
#[derive(Debug)]
pub(crate) struct Simulation {
    sim: Driver,
    pool: rayon::ThreadPool,
}

/// A frame as the callback receives it: index, time, and new float64 arrays (n, 3) of the
/// positions (cm) and velocities (cm/s) at that frame.
type FrameArgs = (u64, f64, Py<PyArray2<f64>>, Py<PyArray2<f64>>);

/// Keeps the frame the engine reaches (when asked to), as the arrays handed to `on_frame`; the
/// callback runs after the engine has returned, so it may call the simulation.
struct FrameCapture {
    wanted: bool,
    frame: Option<FrameArgs>,
}

impl FrameSink for FrameCapture {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        if !self.wanted {
            return Ok(());
        }
        let velocities = &frame.model().state().v;
        self.frame = Some(Python::attach(|py| {
            (
                frame.index,
                frame.time,
                arrays::to_numpy(py, frame.positions.len(), |i| frame.positions[i]).unbind(),
                arrays::to_numpy(py, velocities.len(), |i| velocities[i]).unbind(),
            )
        }));
        Ok(())
    }
}

/// Set when Python has a signal to handle (Ctrl-C) during a run: every simulation stops between
/// two events, and the method that ran it raises the signal's exception.
static STOP: AtomicBool = AtomicBool::new(false);

/// How often the calling thread looks for signals while the engine runs.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Whether a job on the pool has finished, for a thread that waits for it.
#[derive(Default)]
struct Done {
    finished: Mutex<bool>,
    changed: Condvar,
}

/// Marks a [`Done`] finished when dropped: when the job returns, or if it unwinds.
struct OnDrop<'a>(&'a Done);

impl Drop for OnDrop<'_> {
    fn drop(&mut self) {
        *self
            .0
            .finished
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.0.changed.notify_all();
    }
}

impl Done {
    /// A guard that marks the job finished when it drops.
    fn on_drop(&self) -> OnDrop<'_> {
        OnDrop(self)
    }

    /// Waits up to `timeout` for the job to finish; says whether it has.
    fn wait(&self, timeout: Duration) -> bool {
        let finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
        let (finished, _) = self
            .changed
            .wait_timeout_while(finished, timeout, |f| !*f)
            .unwrap_or_else(PoisonError::into_inner);
        *finished
    }
}

impl Simulation {
    /// Runs `advance` on the pool with the GIL released, keeping the last frame it reaches when
    /// `capture` is set; a failure becomes the signal's exception (Ctrl-C: `KeyboardInterrupt`,
    /// the run stopped between two events), or `acm.RunError` with the command line's message.
    fn advance<T: Send>(
        &mut self,
        py: Python<'_>,
        capture: bool,
        advance: impl FnOnce(&mut Driver, &mut dyn FrameSink) -> Result<T, RunError> + Send,
    ) -> PyResult<(T, Option<FrameArgs>)> {
        let mut sink = FrameCapture {
            wanted: capture,
            frame: None,
        };
        let (sim, pool) = (&mut self.sim, &self.pool);
        let (mut result, mut signal) = (None, None);
        let done = Done::default();
        // The engine runs on the pool while this thread, where Python handles signals, waits.
        pool.in_place_scope(|scope| {
            scope.spawn(|_| {
                let _done = done.on_drop();
                result = Some(advance(sim, &mut sink));
            });
            while !py.detach(|| done.wait(SIGNAL_POLL)) {
                if let Err(e) = py.check_signals() {
                    signal.get_or_insert(e);
                    STOP.store(true, Ordering::Relaxed);
                }
            }
        });
        STOP.store(false, Ordering::Relaxed);
        match (result, signal) {
            (Some(Ok(value)), None) => Ok((value, sink.frame)),
            (_, Some(signal)) => Err(signal),
            (Some(Err(e)), None) => Err(crate::RunError::new_err(format!(
                "{}: {e}",
                self.sim.source().model().name()
            ))),
            (None, None) => Err(crate::RunError::new_err(
                "the engine stopped without a result",
            )),
        }
    }

    /// `t`, or now when `None`; it must not be earlier than now.
    fn at(&self, t: Option<f64>) -> PyResult<f64> {
        let now = self.sim.source().time();
        match t {
            None => Ok(now),
            Some(t) if t.is_finite() && t >= now => Ok(t),
            Some(t) => Err(InputError::new_err(format!(
                "t must be a time >= the current time {now} s, got {t}"
            ))),
        }
    }

    /// Every vertex's position at `t` (not before now): ACM extends each vertex's straight-line
    /// motion; the fixed-step methods have positions at the end of their last step only.
    fn positions_at(&self, t: f64) -> PyResult<Vec<DVec3>> {
        let source = self.sim.source();
        let mut positions = Vec::new();
        match &self.sim {
            Driver::Acm(sim) => sim.model().positions_at(t, &mut positions),
            _ if t == source.time() => positions.clone_from(&source.model().state().x),
            _ => {
                return Err(InputError::new_err(format!(
                    "t = {t} s: integrator = {} has positions at the end of its last step \
                     ({} s) only; run_until(t) first",
                    self.sim.method_name(),
                    source.time()
                )))
            }
        }
        Ok(positions)
    }
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (scene, threads = None))]
    fn new(py: Python<'_>, scene: &Scene, threads: Option<i64>) -> PyResult<Self> {
        let threads = threads
            .map(|n| {
                usize::try_from(n).map_err(|_| {
                    InputError::new_err(format!("threads must be at least 1, got {n}"))
                })
            })
            .transpose()?;
        acm::threads::check_thread_count("threads", threads).map_err(InputError::new_err)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.unwrap_or(0))
            .build()
            .map_err(|e| crate::RunError::new_err(format!("cannot start the thread pool: {e}")))?;
        let scene = &scene.scene;
        let mut sim = py
            .detach(|| pool.install(|| Driver::new(scene)))
            .map_err(|e| InputError::new_err(format!("{}: {e}", scene.name)))?;
        sim.stepper().stop_when(&STOP);
        Ok(Self { sim, pool })
    }

    /// Processes every event up to and including time `t` (s), which must not be before
    /// now (a fixed-step method takes every step that ends by `t`).
    /// `on_frame(index, time, positions, velocities)`, if given, receives each frame
    /// reached on the way (every `frame_interval`): new float64 arrays (n, 3) in cm and cm/s.
    /// It runs between two events, so it may read or steer the simulation (`time`,
    /// `set_velocity`, ...); an exception it raises stops the run there and is raised again.
    #[pyo3(signature = (t, on_frame = None))]
    fn run_until(slf: &Bound<'_, Self>, t: f64, on_frame: Option<Py<PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let now = slf.borrow().sim.source().time();
        if !(t.is_finite() && t >= 0.0) {
            return Err(InputError::new_err(format!(
                "t must be a time >= 0, got {t}"
            )));
        }
        if t < now {
            return Err(InputError::new_err(format!(
                "t = {t} s is before the current time {now} s: a simulation only runs forward \
                 (build a new Simulation to start again)"
            )));
        }
        let Some(on_frame) = on_frame else {
            let mut this = slf.borrow_mut();
            return this
                .advance(py, false, |sim, sink| sim.stepper().run_until(t, sink))
                .map(drop);
        };
        // To each frame's time, then the callback with the simulation free, and on.
        loop {
            let (stop, frame) = {
                let mut this = slf.borrow_mut();
                let source = this.sim.source();
                let next = source.run_stats().frames as f64 * source.model().frame_interval();
                let stop = next.min(t);
                let ((), frame) =
                    this.advance(py, true, |sim, sink| sim.stepper().run_until(stop, sink))?;
                (stop, frame)
            };
            match frame {
                Some(frame) => drop(on_frame.call1(py, frame)?),
                None if stop < t => {
                    return Err(crate::RunError::new_err(format!(
                        "no frame came at t = {stop} s, where one was due"
                    )))
                }
                None => {}
            }
            if stop >= t {
                return Ok(());
            }
        }
    }

    /// Processes the next event and returns `(time, kind)` (`kind` as `"Force"`, `"Snapshot"`,
    /// `"Certificate"`, ...), or `None` when no event is left. A snapshot is handed to
    /// `on_frame(index, time, positions, velocities)`, as by `run_until`. ACM only.
    #[pyo3(signature = (on_frame = None))]
    fn step(slf: &Bound<'_, Self>, on_frame: Option<Py<PyAny>>) -> PyResult<Option<(f64, String)>> {
        let py = slf.py();
        slf.borrow_mut().sim.acm("step()")?;
        let (processed, frame) =
            slf.borrow_mut()
                .advance(py, on_frame.is_some(), |sim, sink| match sim {
                    Driver::Acm(sim) => sim.step(sink),
                    _ => Ok(None),
                })?;
        if let (Some(on_frame), Some(frame)) = (on_frame, frame) {
            on_frame.call1(py, frame)?;
        }
        Ok(processed.map(|p| (p.time, format!("{:?}", p.kind))))
    }

    /// The current simulated time (s): every event before it has been processed.
    #[getter]
    fn time(&self) -> f64 {
        self.sim.source().time()
    }

    /// The method that runs the scene, as `integrator.method` names it: `"acm"`, `"sync"`,
    /// `"implicit"` or `"oba"`.
    #[getter]
    fn method(&self) -> &'static str {
        self.sim.method_name()
    }

    /// What the run did so far, with the names of `stats.json`.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.sim.stats_json())
    }

    /// Every vertex's position (cm) at time `t` (default: now), a new float64 array of shape
    /// (n, 3). Under ACM a later `t` extends each vertex's current straight-line motion; the
    /// fixed-step methods take no later `t`. Rigid bodies' vertices are their posed surfaces.
    #[pyo3(signature = (t = None))]
    fn positions<'py>(
        &self,
        py: Python<'py>,
        t: Option<f64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let positions = self.positions_at(self.at(t)?)?;
        Ok(arrays::to_numpy(py, positions.len(), |i| positions[i]))
    }

    /// Every vertex's velocity now (cm/s), a new float64 array of shape (n, 3).
    fn velocities<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        let v = &self.sim.source().model().state().v;
        arrays::to_numpy(py, v.len(), |i| v[i])
    }

    /// The triangles over all objects (global vertex indices), an int64 array of shape (m, 3).
    fn triangles<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        arrays::triangles_to_numpy(py, self.sim.source().model().triangles())
    }

    /// The rigid bodies now (`integrator = "oba"` only), in the order of the profile's
    /// `[[body]]` tables: a dict of `names` (list of str), `positions` (centres of mass, cm),
    /// `orientations` (unit quaternions `(x, y, z, w)`, scalar last, as
    /// `scipy.spatial.transform.Rotation.from_quat` reads them), `velocities` (cm/s) and
    /// `angular_velocities` (rad/s, world frame): float64 arrays of shape (k, 3) or (k, 4).
    fn bodies<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let Driver::Oba(sim) = &self.sim else {
            return Err(InputError::new_err(format!(
                "{}: bodies() reads rigid bodies, which integrator = oba moves; integrator = {} \
                 runs every object (a [[body]] too) as a deformable surface: read positions()",
                self.sim.source().model().name(),
                self.sim.method_name()
            )));
        };
        let bodies = sim.bodies();
        let vectors = |f: &dyn Fn(usize) -> DVec3| arrays::to_numpy(py, bodies.len(), f);
        let dict = PyDict::new(py);
        let names: Vec<&str> = bodies.iter().map(|b| b.name.as_str()).collect();
        dict.set_item("names", names)?;
        dict.set_item("positions", vectors(&|b| bodies[b].pose.position))?;
        let quaternions: Vec<Vec<f64>> = (bodies.iter())
            .map(|b| b.pose.orientation.to_array().to_vec())
            .collect();
        dict.set_item("orientations", PyArray2::from_vec2(py, &quaternions)?)?;
        dict.set_item("velocities", vectors(&|b| bodies[b].velocity))?;
        dict.set_item(
            "angular_velocities",
            vectors(&|b| bodies[b].angular_velocity),
        )?;
        Ok(dict)
    }

    /// Per object, in order: `(name, first_vertex, vertex_count)`; global vertex `first_vertex +
    /// i` is the object's vertex `i`.
    #[getter]
    fn objects(&self) -> Vec<(String, u32, u32)> {
        self.sim
            .source()
            .model()
            .objects()
            .iter()
            .map(|o| (o.name.clone(), o.first_vertex, o.vertex_count))
            .collect()
    }

    /// Sets the velocity (cm/s) of `vertices` (global integer indices) from now on: `v` is one
    /// velocity for all of them, shape (3,), or one each, shape (k, 3). Fixed vertices cannot
    /// be steered, nor scripted ones while their script has a key to come (it would replace the
    /// velocity); nothing changes if any vertex is refused or missing, or any speed is beyond
    /// what contact can resolve in the scene. ACM only.
    fn set_velocity(
        &mut self,
        vertices: &Bound<'_, PyAny>,
        v: PyArrayLikeDyn<'_, f64, AllowTypeChange>,
    ) -> PyResult<()> {
        let sim = self.sim.acm("set_velocity()")?;
        let vertices: PyArrayLike1<'_, i64, AllowTypeChange> =
            arrays::integers("vertices", vertices)?.extract()?;
        let vertices = arrays::indices("vertices", &vertices)?;
        let v = v.as_array();
        let velocity: Box<dyn Fn(usize) -> DVec3> = match v.shape() {
            [3] => {
                let one = DVec3::new(v[[0]], v[[1]], v[[2]]);
                Box::new(move |_| one)
            }
            [k, 3] if *k == vertices.len() => {
                Box::new(|j| DVec3::new(v[[j, 0]], v[[j, 1]], v[[j, 2]]))
            }
            shape => {
                return Err(InputError::new_err(format!(
                    "v: expected shape (3,) or ({}, 3), got {shape:?}",
                    vertices.len()
                )))
            }
        };
        for (j, &vertex) in vertices.iter().enumerate() {
            sim.check_velocity(vertex as usize, velocity(j))
                .map_err(|e| InputError::new_err(format!("vertices[{j}]: {e}")))?;
        }
        for (j, &vertex) in vertices.iter().enumerate() {
            sim.set_velocity(vertex as usize, velocity(j))
                .map_err(|e| InputError::new_err(format!("vertices[{j}]: {e}")))?;
        }
        Ok(())
    }

    /// The exact intersection audit of `positions` ((n, 3), default: now) on this simulation's
    /// triangles, as `acm check` reports one frame: `intersecting_pairs`, `min_distance` over
    /// non-adjacent pairs closer than `cutoff` (cm), `first_bad`.
    #[pyo3(signature = (positions = None, cutoff = 1.0))]
    fn check<'py>(
        &self,
        py: Python<'py>,
        positions: Option<PyArrayLike2<'py, f64, AllowTypeChange>>,
        cutoff: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        if cutoff.is_nan() || cutoff < 0.0 {
            return Err(InputError::new_err(format!(
                "cutoff must be >= 0, got {cutoff}"
            )));
        }
        let model = self.sim.source().model();
        let positions = match &positions {
            Some(p) => arrays::points("positions", p)?,
            None => self.positions_at(self.sim.source().time())?,
        };
        if positions.len() != model.state().len() {
            return Err(InputError::new_err(format!(
                "positions: expected {} rows (one per vertex), got {}",
                model.state().len(),
                positions.len()
            )));
        }
        let triangles = model.triangles();
        let mut report = AuditReport::default();
        py.detach(|| {
            self.pool
                .install(|| audit_positions(&positions, triangles, cutoff, 0, &mut report))
        })
        .map_err(|e| InputError::new_err(format!("positions: {e}")))?;
        to_python(py, &report)
    }

    fn __repr__(&self) -> String {
        format!(
            "Simulation({:?}, {}: {} vertices, t = {} s)",
            self.sim.source().model().name(),
            self.sim.method_name(),
            self.sim.source().model().state().len(),
            self.sim.source().time()
        )
    }
}
