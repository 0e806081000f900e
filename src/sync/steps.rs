//! What the fixed-step integrators (the velocity filter of this module and
//! [`crate::implicit`]) share: the step clock aligned with frames, frame output, and scripted
//! motion over a step.

use std::time::Instant;

use glam::DVec3;

use std::sync::atomic::{AtomicBool, Ordering};

use crate::forces::external::ScriptedMotion;
use crate::scene::SceneError;
use crate::{Frame, FrameSink, FrameSource, Model, RunError, RunStats, Stepper};

/// Steps of equal length `h`, the largest that divides the frame interval and is at most the
/// requested step, counted from time 0 (frame times are exact multiples of the interval).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct FixedSteps {
    frame_interval: f64,
    steps_per_frame: u64,
    step: f64,
}

impl FixedSteps {
    /// The steps for `requested` (s); `field` names the setting in errors.
    pub(crate) fn new(
        frame_interval: f64,
        requested: f64,
        field: &str,
    ) -> Result<Self, SceneError> {
        let steps_per_frame = (frame_interval / requested).ceil().max(1.0);
        if steps_per_frame > 1e9 {
            return Err(SceneError::new(
                field,
                format!(
                    "{requested} s is more than 10^9 steps per frame interval; use a larger step"
                ),
            ));
        }
        Ok(Self {
            frame_interval,
            steps_per_frame: steps_per_frame as u64,
            step: frame_interval / steps_per_frame,
        })
    }

    /// The step `h` (s).
    pub(crate) fn step(&self) -> f64 {
        self.step
    }

    /// The start time of step `n`.
    pub(crate) fn time_of(&self, n: u64) -> f64 {
        let frames = n / self.steps_per_frame;
        frames as f64 * self.frame_interval + (n % self.steps_per_frame) as f64 * self.step
    }

    /// The frame that the start of step `n` is, if it is one.
    pub(crate) fn frame_at(&self, n: u64) -> Option<u64> {
        (n % self.steps_per_frame == 0).then_some(n / self.steps_per_frame)
    }
}

/// What is due next in a fixed-step run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Due {
    /// Write frame `index` at `time` (the end of the last step taken).
    Frame {
        /// Frame number.
        index: u64,
        /// Its time.
        time: f64,
    },
    /// Take the step from `t` to `t_next`.
    Step {
        /// Start of the step.
        t: f64,
        /// Its end.
        t_next: f64,
    },
}

/// Where a fixed-step run is: the steps taken and the next frame to write.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Progress {
    /// The step clock.
    pub clock: FixedSteps,
    /// Steps taken.
    pub steps: u64,
    /// The next frame to write.
    pub next_frame: u64,
}

impl Progress {
    /// No step taken yet.
    pub(crate) fn new(clock: FixedSteps) -> Self {
        Self {
            clock,
            steps: 0,
            next_frame: 0,
        }
    }

    /// The end of the last step taken.
    pub(crate) fn time(&self) -> f64 {
        self.clock.time_of(self.steps)
    }

    /// Hands `act` the frames (at step ends that are frame times, and at time 0) and the steps
    /// whose end is at most `until`, in order.
    pub(crate) fn run<E>(
        &mut self,
        until: f64,
        mut act: impl FnMut(Due) -> Result<(), E>,
    ) -> Result<(), E> {
        let slack = 1e-9 * self.clock.step();
        loop {
            let time = self.time();
            if self.clock.frame_at(self.steps) == Some(self.next_frame) && time <= until + slack {
                act(Due::Frame {
                    index: self.next_frame,
                    time,
                })?;
                self.next_frame += 1;
            }
            let t_next = self.clock.time_of(self.steps + 1);
            if t_next > until + slack {
                return Ok(());
            }
            act(Due::Step { t: time, t_next })?;
            self.steps += 1;
        }
    }
}

/// A fixed-step integrator, as [`run_until`] drives it.
pub(crate) trait FixedStepper: Stepper {
    /// Whether the flag of [`Stepper::stop_when`] is set.
    fn stop_requested(&self) -> bool;
    /// The common statistics, which the run updates.
    fn run_stats_mut(&mut self) -> &mut RunStats;
    /// Where the run is.
    fn progress(&mut self) -> &mut Progress;
    /// Records the number of steps taken in the integrator's own statistics.
    fn record_steps(&mut self, steps: u64);
    /// One step from `t` to `t_next`.
    fn take_step(&mut self, t: f64, t_next: f64) -> Result<(), RunError>;
}

/// Whether `flag` (a stop flag, if any) is set.
pub(crate) fn requested(flag: Option<&'static AtomicBool>) -> bool {
    flag.is_some_and(|f| f.load(Ordering::Relaxed))
}

/// Runs `stepper` from where it is to `until` (see [`Progress::run`]), handing frames to
/// `sink`, and records frames, steps, wall and simulated time and threads in its statistics.
/// Stops between two steps with [`RunError::Interrupted`] once its stop flag is set
/// ([`Stepper::stop_when`]).
pub(crate) fn run_until<S: FixedStepper>(
    stepper: &mut S,
    until: f64,
    sink: &mut dyn FrameSink,
) -> Result<(), RunError> {
    let mut progress = *stepper.progress();
    let started = Instant::now();
    let result = progress.run(until, |due| match due {
        Due::Frame { index, time } => {
            write_frame(&*stepper, index, time, sink)?;
            stepper.run_stats_mut().frames += 1;
            Ok(())
        }
        Due::Step { t, t_next } => {
            if stepper.stop_requested() {
                stepper.run_stats_mut().interrupted = true;
                return Err(RunError::Interrupted { time: t });
            }
            stepper.take_step(t, t_next)?;
            resolvable(stepper.model(), t_next, t_next - t)
        }
    });
    *stepper.progress() = progress;
    stepper.record_steps(progress.steps);
    let run = stepper.run_stats_mut();
    run.wall_seconds += started.elapsed().as_secs_f64();
    run.simulated_seconds = progress.time();
    run.threads = rayon::current_num_threads();
    result
}

/// Hands the positions of `source`'s model (all at `time`) to `sink` as frame `index`, after
/// checking that they are finite.
fn write_frame(
    source: &dyn FrameSource,
    index: u64,
    time: f64,
    sink: &mut dyn FrameSink,
) -> Result<(), RunError> {
    let positions = &source.model().state.x;
    if let Some(vertex) = positions.iter().position(|p| !p.is_finite()) {
        return Err(RunError::Diverged { time, vertex });
    }
    sink.frame(&Frame {
        index,
        time,
        positions,
        source,
    })
}

/// Writes every vertex's step into `out`: `h` for the free vertices, infinite for those no
/// force moves.
pub(crate) fn uniform_steps(model: &Model, h: f64, out: &mut Vec<f64>) {
    out.clear();
    out.extend((model.state.inv_mass.iter()).map(|&w| if w > 0.0 { h } else { f64::INFINITY }));
}

/// The largest coordinate, and motion over a step in a coordinate, that continuous collision
/// detection resolves (cm): its cubics multiply three coordinate differences, which stay
/// below `f64::MAX` with a wide margin up to here.
pub(crate) const COORDINATE_LIMIT: f64 = 1e100;

/// Checks that every position and velocity of `model` at `time` is finite, and that every
/// position and its motion over a step of length `h` is within [`COORDINATE_LIMIT`]: a step
/// that broke this stops the run before the next step's collision detection reads the state.
fn resolvable(model: &Model, time: f64, h: f64) -> Result<(), RunError> {
    let state = &model.state;
    let pairs = || state.x.iter().zip(&state.v);
    if let Some(vertex) = pairs().position(|(x, v)| !(x.is_finite() && v.is_finite())) {
        return Err(RunError::Diverged { time, vertex });
    }
    let far = |x: &DVec3, v: &DVec3| x.abs().max_element().max(h * v.abs().max_element());
    match pairs().position(|(x, v)| far(x, v) > COORDINATE_LIMIT) {
        Some(vertex) => Err(RunError::OutOfRange { time, vertex }),
        None => Ok(()),
    }
}

/// The scripted vertices of `scripts`: each vertex's index, script and position in `x`.
pub(crate) fn script_origins(scripts: &[ScriptedMotion], x: &[DVec3]) -> Vec<(u32, usize, DVec3)> {
    scripts
        .iter()
        .enumerate()
        .flat_map(|(k, script)| script.vertices.iter().map(move |&v| (v, k)))
        .map(|(v, k)| (v, k, x[v as usize]))
        .collect()
}

/// Moves the scripted vertices to their positions at `t` and gives them the average velocity
/// of their script over `[t, t_next]`, `h = t_next - t` (so their positions at step ends are
/// exact).
pub(crate) fn apply_scripts(
    origins: &[(u32, usize, DVec3)],
    scripts: &[ScriptedMotion],
    (t, t_next, h): (f64, f64, f64),
    x: &mut [DVec3],
    v: &mut [DVec3],
) {
    for &(i, k, origin) in origins {
        let script = &scripts[k];
        let (a, b) = (displacement(script, t), displacement(script, t_next));
        x[i as usize] = origin + a;
        v[i as usize] = (b - a) / h;
    }
}

/// How far a script has moved its vertices by time `t` (they stand still before the first key).
fn displacement(script: &ScriptedMotion, t: f64) -> DVec3 {
    let mut d = DVec3::ZERO;
    for (k, &(start, velocity)) in script.keys.iter().enumerate() {
        if t <= start {
            break;
        }
        let end = script.keys.get(k + 1).map_or(t, |&(next, _)| next.min(t));
        d += (end - start) * velocity;
    }
    d
}
