//! `acm`: run, inspect and audit Asynchronous Contact Mechanics simulations.
//!
//! Exit codes: 0 success, 1 internal error, 2 bad input.

mod plot;
mod scaling;
mod view;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use acm::implicit::ImplicitSimulation;
use acm::output::{write_stats, ContactCsv, EnergyCsv, FrameFormat, FrameWriter, StepsCsv};
use acm::profiling::{is_task, TraceTotals};
use acm::scene::profile::{self, ProfileError};
use acm::scene::{Method, SceneError};
use acm::sync::SyncSimulation;
use acm::{Frame, FrameSink, FrameSource, RunError, Scene, Simulation, Stepper, WaitPolicy};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write as _;
use view::FrameSet;

#[derive(Parser)]
#[command(
    name = "acm",
    version,
    about = "Asynchronous Contact Mechanics: cloth and thin shells, one event at a time",
    long_about = "Asynchronous Contact Mechanics: cloth and thin shells, one event at a time.\n\n\
                  Without a command, runs the built-in default scene into ./out."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run a profile (or the built-in default scene) and write frames.
    Run(RunArgs),
    /// Validate a profile and print a summary (vertices, masses, clocks).
    Info(InfoArgs),
    /// Exact intersection audit of the frames in a directory (exit 3 if any pair intersects).
    Check(CheckArgs),
    /// Run a profile with ACM, the synchronous baseline (thesis ch. 3), implicit contact
    /// handling and, when it has rigid bodies, optimization-based animation to the same time
    /// and print wall time, intersections, energy and momentum drift, minimum distance.
    Compare(CompareArgs),
    /// Draw PNG charts of a run's output directory: energy and momentum, penalty pairs and the
    /// deepest layer over time, and the histogram of vertex time steps.
    Plot(PlotArgs),
    /// Write one self-contained HTML page that plays a run's frames (WebGL: drag to orbit,
    /// wheel to zoom, a time slider); open it in any browser.
    View(ViewArgs),
    /// Draw a frame of a run as a shaded PNG picture, on the CPU (no GPU or display needed).
    Render(RenderArgs),
    /// Predict a run's speed-up on more threads from its traces on one thread and on two
    /// (`acm run ... --trace`): its serial part, its parallel work and the cost of its forks.
    Scaling(scaling::ScalingArgs),
}

#[derive(Args)]
struct ViewArgs {
    /// Output directory of `acm run` holding OBJ or PLY frames.
    dir: PathBuf,
    /// The page to write (default: DIR/view.html).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct RenderArgs {
    /// Output directory of `acm run` holding OBJ or PLY frames.
    dir: PathBuf,
    /// The frame to draw (default: the last).
    #[arg(long, allow_negative_numbers = true)]
    frame: Option<i64>,
    /// The picture to write (default: DIR/frame_NNNNN.png).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Picture size in pixels, WIDTHxHEIGHT.
    #[arg(long, default_value = "960x720")]
    size: String,
}

#[derive(Args)]
struct PlotArgs {
    /// Output directory of `acm run` (holding energy.csv; contact.csv and steps.csv for ACM runs).
    dir: PathBuf,
}

#[derive(Args)]
struct CompareArgs {
    /// Profile (TOML).
    profile: PathBuf,
    /// Simulated time (s) of every run (default: the profile's duration).
    #[arg(long, allow_negative_numbers = true)]
    until: Option<f64>,
    /// Override a profile value (repeatable).
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    overrides: Vec<String>,
    /// Worker threads (default: all cores; at most 4 per logical core, or 64).
    #[arg(long, allow_negative_numbers = true)]
    threads: Option<usize>,
}

#[derive(Args)]
struct CheckArgs {
    /// Directory holding the frames of one run: frame_00000.obj, ... or frame_00000.ply, ...
    dir: PathBuf,
    /// Report the minimum distance over pairs closer than this (cm).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    cutoff: f64,
}

#[derive(Args)]
struct RunArgs {
    /// Profile (TOML). Without it, runs the built-in default scene.
    profile: Option<PathBuf>,
    /// Output directory for frames, stats.json, energy.csv, and for ACM contact.csv and
    /// steps.csv.
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Frame files: obj (text, positions, the input's UVs), ply (binary, float positions and
    /// velocities, a face list), ply-strips (the same with triangle strips, for Blender) or
    /// usd (one frames.usda stage with time-sampled points and velocities).
    #[arg(long, default_value = "obj", value_name = "obj|ply|ply-strips|usd")]
    format: FrameFormat,
    /// Stop after this many frames (the frame at t = 0 counts).
    #[arg(long, conflicts_with = "until", allow_negative_numbers = true)]
    frames: Option<u64>,
    /// Stop at this simulated time (s) instead of the profile's duration.
    #[arg(long, allow_negative_numbers = true)]
    until: Option<f64>,
    /// Override a profile value, e.g. --set object.sheet.material.bend=0.5 (repeatable).
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    overrides: Vec<String>,
    /// Where to write stats.json (default: OUT/stats.json).
    #[arg(long)]
    stats: Option<PathBuf>,
    /// Worker threads (default: all cores; at most 4 per logical core, or 64).
    #[arg(long, allow_negative_numbers = true)]
    threads: Option<usize>,
    /// How idle worker threads wait between the event loop's parallel phases: active (poll,
    /// the fastest; a busy core per thread while the run lasts) or passive (sleep).
    #[arg(long, default_value = "active", value_name = "active|passive")]
    wait: WaitPolicy,
    /// Check every certificate, layer and broad-phase invariant as of every event (about 1.6x
    /// the cost); the first breach stops the run.
    #[arg(long)]
    audit: bool,
    /// Write a Chrome/Perfetto JSON trace of the loop's phases to this file (open it in
    /// ui.perfetto.dev) and print the time per phase.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

#[derive(Args)]
struct InfoArgs {
    /// Profile (TOML).
    profile: PathBuf,
    /// Override a profile value (repeatable).
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    overrides: Vec<String>,
}

/// A failure, classified for the exit code.
enum Failure {
    /// The user's input is wrong (exit 2).
    BadInput(String),
    /// Something broke that is not the input's fault (exit 1).
    Internal(String),
    /// `acm check` found intersecting triangles (exit 3; the report is already printed).
    Intersecting,
    /// Ctrl-C or SIGTERM stopped the run (exit 130, the shell's code for SIGINT); what was
    /// written is whole.
    Interrupted(String),
}

impl From<ProfileError> for Failure {
    fn from(e: ProfileError) -> Self {
        Failure::BadInput(e.to_string())
    }
}

/// Gives every allocation of 1 MiB or more its own memory mapping (glibc). By default glibc's
/// mmap threshold rises after the first large free, up to 32 MiB, and arrays below it come from
/// the heap, where growing one copies it and a freed one stays resident: about 50 MB of the
/// 10^6-vertex drape's peak (1,086 -> 1,035 MB, `benches/README.md`). Mapped arrays grow by
/// `mremap` and go back to the system when freed. The library leaves the allocator alone: an
/// embedding program chooses its own.
fn keep_large_arrays_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes a tuning parameter of glibc's allocator; it is called
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

fn main() -> ExitCode {
    keep_large_arrays_mapped();
    acm::profiling::start();
    let cli = Cli::parse();
    // No command: `acm run` with every default (the built-in scene into ./out).
    let command = cli.command.unwrap_or_else(|| {
        Cli::parse_from(["acm", "run"])
            .command
            .expect("`acm run` parses")
    });
    let result = match command {
        Command::Run(args) => run(args),
        Command::Info(args) => info(args),
        Command::Check(args) => check(args),
        Command::Compare(args) => compare(args),
        Command::Plot(args) => plot(&args.dir),
        Command::View(args) => view(args),
        Command::Render(args) => render(args),
        Command::Scaling(args) => scaling::scaling(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::BadInput(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Internal(message)) => {
            eprintln!("internal error: {message}");
            ExitCode::from(1)
        }
        Err(Failure::Intersecting) => ExitCode::from(3),
        Err(Failure::Interrupted(message)) => {
            eprintln!("{message}");
            ExitCode::from(130)
        }
    }
}

/// Set by the first Ctrl-C or SIGTERM; the run stops between two events and writes its
/// `stats.json`.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Makes the first SIGINT (Ctrl-C) or SIGTERM (`kill`, `timeout`, job schedulers) set
/// [`INTERRUPTED`]; a second one of the same signal ends the process at once.
fn stop_on_signals() {
    extern "C" fn on_signal(_: libc::c_int) {
        INTERRUPTED.store(true, Ordering::Relaxed);
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe; the
        // sigaction struct is fully initialised before the call. SA_RESETHAND restores the
        // default action after the first signal.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

fn load(profile: Option<&Path>, overrides: &[String]) -> Result<Scene, Failure> {
    Ok(match profile {
        Some(path) => profile::load(path, overrides)?,
        None => profile::builtin(overrides)?,
    })
}

/// The profile a command names: `path` when it exists or is a path; a bare name (`drape_10k`)
/// is `profiles/NAME.toml` in the working directory, else in this program's source checkout.
fn find_profile(path: PathBuf) -> PathBuf {
    let bare = path.components().count() == 1 && path.extension().is_none();
    if path.exists() || !bare {
        return path;
    }
    let file = Path::new("profiles").join(&path).with_extension("toml");
    [
        file.clone(),
        Path::new(env!("CARGO_MANIFEST_DIR")).join(&file),
    ]
    .into_iter()
    .find(|candidate| candidate.is_file())
    .unwrap_or(path)
}

/// The last line of a run: how to look at what it wrote.
fn print_next_steps(out: &Path, format: FrameFormat) {
    if format == FrameFormat::Usd {
        println!(
            "look at it: open {} in usdview, Blender or Houdini",
            format.path(out, 0).display()
        );
        return;
    }
    let out = out.display();
    println!(
        "look at it: acm view {out} (a page for the browser), acm render {out} (a picture), \
         acm check {out} (the intersection audit)"
    );
}

/// What names a profile in messages: its path, or the built-in scene.
fn source(profile: Option<&Path>) -> String {
    profile.map_or_else(
        || profile::BUILTIN_NAME.to_string(),
        |p| p.display().to_string(),
    )
}

/// The failure of building the scene of profile `source`.
fn bad_scene(source: &str, e: SceneError) -> Failure {
    Failure::BadInput(format!("{source}: {e}"))
}

fn run(mut args: RunArgs) -> Result<(), Failure> {
    args.profile = args.profile.map(find_profile);
    let mut scene = load(args.profile.as_deref(), &args.overrides)?;
    let file = source(args.profile.as_deref());
    let until = run_until_time(&args, &scene)?;
    let pool = thread_pool(args.threads)?;
    let (name, frame_interval) = (scene.name.clone(), scene.frame_interval);
    // Texture coordinates go to the frames, not to the model.
    let uvs: Vec<_> = (scene.objects.iter_mut())
        .map(|o| o.mesh.uvs.take())
        .collect();
    // Build before touching the output directory, so bad input leaves it as it was. The scene
    // is freed once built; the build's parallel parts run on the run's threads too.
    let mut stepper = pool.install(|| build_stepper(scene, &args, &file))?;
    let outputs = Outputs::create(&args, &*stepper, uvs)?;
    let mut sink = RunSink {
        progress: progress_bar(until, frame_interval),
        started: Instant::now(),
        ..outputs.sink
    };
    stop_on_signals();
    stepper.stop_when(&INTERRUPTED);
    if outputs.trace.is_some() {
        acm::profiling::start_trace();
    }
    let result = pool.install(|| stepper.run_until(until, &mut sink));
    let finished = sink.finish(&outputs.stats_path, &stepper.stats_json());
    if let Some((path, mut file)) = outputs.trace {
        let totals = acm::profiling::finish_trace(&mut file)
            .and_then(|totals| file.flush().map(|()| totals))
            .map_err(|e| Failure::Internal(format!("{}: {e}", path.display())))?;
        print_zone_totals(&totals, stepper.run_stats().wall_seconds);
    }
    match result {
        Ok(()) => {
            finished?;
            let r = stepper.run_stats();
            println!(
                "{name}: {} frames in {} ({} vertices, {:.3} s simulated, {})",
                r.frames,
                args.out.display(),
                r.model.vertices,
                r.simulated_seconds,
                stepper.summary()
            );
            print_next_steps(&args.out, args.format);
            Ok(())
        }
        Err(e) => Err(run_failure(e, &name, &args.out)),
    }
}

/// The simulated time `acm run` goes to: `--frames`, `--until`, or the scene's duration.
fn run_until_time(args: &RunArgs, scene: &Scene) -> Result<f64, Failure> {
    let until = match (args.frames, args.until) {
        (Some(0), _) => return Err(Failure::BadInput("--frames must be at least 1".into())),
        (Some(n), _) => (n - 1) as f64 * scene.frame_interval,
        (None, Some(t)) if !(t.is_finite() && t >= 0.0) => {
            return Err(Failure::BadInput(format!(
                "--until must be a time >= 0, got {t}"
            )))
        }
        (None, Some(t)) => t,
        (None, None) => scene.duration,
    };
    let frames = scene.frames_until(until);
    if frames > Scene::MAX_FRAMES {
        let flag = if args.frames.is_some() {
            "--frames"
        } else {
            "--until"
        };
        return Err(Failure::BadInput(format!(
            "{flag}: {frames} frames of {} s is more than {}; run less far or set a larger \
             scene.frame_interval",
            scene.frame_interval,
            Scene::MAX_FRAMES
        )));
    }
    Ok(until)
}

/// The driver of `scene`'s method, with ACM's `--audit` and `--wait` applied; `--trace` and
/// `--audit` are refused for the methods they do not apply to.
fn build_stepper(scene: Scene, args: &RunArgs, file: &str) -> Result<Box<dyn Stepper>, Failure> {
    let method = scene.integrator.method;
    if method != Method::Acm {
        for (flag, given) in [("--trace", args.trace.is_some()), ("--audit", args.audit)] {
            if given {
                return Err(Failure::BadInput(format!(
                    "{flag} applies to ACM's event loop; it is not available with integrator = \
                     {}",
                    method.name()
                )));
            }
        }
        return acm::driver(scene).map_err(|e| bad_scene(file, e));
    }
    let mut sim = Simulation::from_scene(scene).map_err(|e| bad_scene(file, e))?;
    sim.set_audit(args.audit);
    sim.set_wait_policy(args.wait);
    Ok(Box::new(sim))
}

/// What `acm run` writes besides the frames' sink: the trace file and where `stats.json` goes,
/// all created or checked before the run.
struct Outputs {
    sink: RunSink,
    trace: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    stats_path: PathBuf,
}

impl Outputs {
    /// Checks every output path and creates the files, before anything is simulated: a typo
    /// costs no simulated time and leaves no partial output. A run of a method without penalty
    /// layers or vertex clocks drops an earlier ACM run's `contact.csv` and `steps.csv`, so
    /// `acm plot` does not mix the two.
    fn create(
        args: &RunArgs,
        stepper: &dyn Stepper,
        uvs: Vec<Option<acm::mesh::Uvs>>,
    ) -> Result<Self, Failure> {
        let path_error = |flag: &str, path: &Path, e: std::io::Error| {
            Failure::BadInput(format!("{flag} {}: {e}", path.display()))
        };
        if args.out.exists() && !args.out.is_dir() {
            return Err(Failure::BadInput(format!(
                "--out {}: exists and is not a directory",
                args.out.display()
            )));
        }
        std::fs::create_dir_all(&args.out).map_err(|e| path_error("--out", &args.out, e))?;
        let trace = match &args.trace {
            Some(path) => Some((
                path.clone(),
                std::io::BufWriter::new(
                    std::fs::File::create(path).map_err(|e| path_error("--trace", path, e))?,
                ),
            )),
            None => None,
        };
        let stats_flag = if args.stats.is_some() {
            "--stats"
        } else {
            "--out"
        };
        let stats_path = args
            .stats
            .clone()
            .unwrap_or_else(|| args.out.join("stats.json"));
        // The statistics before the first event: stats.json parses from the start, and is
        // replaced whole as the run ends.
        if let Err(e) = write_stats(&stats_path, &stepper.stats_json()) {
            if let Some((path, _)) = &trace {
                // Leave nothing behind: the trace file was created empty just above.
                let _ = std::fs::remove_file(path);
            }
            return Err(path_error(stats_flag, &stats_path, e));
        }
        // Output errors name their file (a full disk: exit 2, "could not write out/frame_...").
        let io = |e: std::io::Error| Failure::BadInput(format!("could not write {e}"));
        let frames = args.format.create(&args.out, uvs).map_err(io)?;
        let (contact_path, steps_path) = (args.out.join("contact.csv"), args.out.join("steps.csv"));
        let (contact, steps) = if stepper.method() == Method::Acm {
            (
                Some(ContactCsv::create(&contact_path).map_err(io)?),
                Some(StepsCsv::create(&steps_path).map_err(io)?),
            )
        } else {
            for path in [&contact_path, &steps_path] {
                match std::fs::remove_file(path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
                    _ => {}
                }
            }
            (None, None)
        };
        let sink = RunSink {
            frames,
            energy: EnergyCsv::create(&args.out.join("energy.csv")).map_err(io)?,
            contact,
            steps,
            progress: ProgressBar::hidden(),
            started: Instant::now(),
        };
        Ok(Self {
            sink,
            trace,
            stats_path,
        })
    }
}

/// The exit class of a run of scene `name` that stopped early.
fn run_failure(e: RunError, name: &str, out: &Path) -> Failure {
    match e {
        RunError::Interrupted { time } => Failure::Interrupted(format!(
            "{name}: interrupted at t = {time} s; the frames in {} and stats.json are whole",
            out.display()
        )),
        RunError::Output(e) => Failure::BadInput(format!(
            "{name}: could not write {e}; the frames before it in {} are whole",
            out.display()
        )),
        e @ (RunError::Diverged { .. }
        | RunError::OutOfRange { .. }
        | RunError::NoProgress { .. }
        | RunError::Stalled { .. }
        | RunError::TimeResolution { .. }
        | RunError::SpeedRunaway { .. }
        | RunError::TooFast { .. }
        | RunError::EnergyRunaway { .. }
        | RunError::KinematicContact { .. }
        | RunError::Unresolved { .. }) => Failure::BadInput(format!("{name}: {e}")),
        e @ (RunError::Internal { .. } | RunError::Audit { .. }) => {
            Failure::Internal(e.to_string())
        }
    }
}

fn compare(args: CompareArgs) -> Result<(), Failure> {
    let scene = load(Some(&find_profile(args.profile)), &args.overrides)?;
    let until = match args.until {
        Some(t) if !(t.is_finite() && t >= 0.0) => {
            return Err(Failure::BadInput(format!(
                "--until must be a time >= 0, got {t}"
            )))
        }
        Some(t) => t,
        None => scene.duration,
    };
    let pool = thread_pool(args.threads)?;
    let rows = pool.install(|| acm::compare::compare(&scene, until));
    println!("{}: every method to t = {until} s", scene.name);
    print!("{}", acm::compare::table(&rows));
    Ok(())
}

/// Prints the time per traced phase, largest first, as shares of the run's wall time, with
/// the time each spent outside parallel tasks, and that time over the whole loop.
fn print_zone_totals(totals: &TraceTotals, wall: f64) {
    let share = |seconds: f64| {
        if wall > 0.0 {
            100.0 * seconds / wall
        } else {
            0.0
        }
    };
    let mut rows: Vec<_> = totals.zones.iter().collect();
    rows.sort_by(|a, b| b.1.seconds.total_cmp(&a.1.seconds));
    eprintln!(
        "{:<16} {:>12} {:>10} {:>7} {:>14}",
        "phase", "count", "seconds", "share", "outside tasks"
    );
    for (name, t) in rows {
        let outside = if is_task(name) {
            String::new()
        } else {
            format!("{:.3}", t.outside_tasks)
        };
        eprintln!(
            "{name:<16} {:>12} {:>10.3} {:>6.1}% {outside:>14}",
            t.count,
            t.seconds,
            share(t.seconds)
        );
    }
    if totals.zones.keys().any(|name| is_task(name)) {
        eprintln!(
            "(a *_task zone is one worker's share of a parallel phase: their times add up over \
             the threads, so their shares can pass 100%)"
        );
    }
    eprintln!(
        "outside tasks: {:.3} s ({:.1}% of the wall time): the loop's serial work, its waits \
         for other workers at joins, and parallel work that opens no task zone",
        totals.outside_tasks,
        share(totals.outside_tasks)
    );
}

fn thread_pool(threads: Option<usize>) -> Result<rayon::ThreadPool, Failure> {
    acm::threads::check_thread_count("--threads", threads).map_err(Failure::BadInput)?;
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
        .map_err(|e| Failure::Internal(format!("cannot start the thread pool: {e}")))
}

fn progress_bar(until: f64, frame_interval: f64) -> ProgressBar {
    let frames = (until / frame_interval).floor() as u64 + 1;
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(frames), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:40} frame {pos}/{len}  {msg}  ETA {eta}")
            .expect("the template is valid"),
    );
    bar
}

/// Frames to OBJ, PLY or USD files and the CSV files, with a progress bar.
struct RunSink {
    frames: Box<dyn FrameWriter>,
    energy: EnergyCsv,
    /// Penalty pairs and layers per frame (ACM runs).
    contact: Option<ContactCsv>,
    /// Vertex time-step histogram per frame (ACM runs).
    steps: Option<StepsCsv>,
    progress: ProgressBar,
    started: Instant,
}

impl RunSink {
    /// Ends the run's output: clears the progress bar, completes the frames (a USD stage) and
    /// replaces `stats.json` (at `stats_path`) with `stats`, whole. The first error names its
    /// file.
    fn finish(&mut self, stats_path: &Path, stats: &impl serde::Serialize) -> Result<(), Failure> {
        self.progress.finish_and_clear();
        let frames = self.frames.finish();
        write_stats(stats_path, stats)
            .and(frames)
            .map_err(|e| Failure::BadInput(format!("could not write {e}")))
    }
}

impl FrameSink for RunSink {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        self.frames.frame(frame)?;
        self.energy.frame(frame)?;
        if let Some(contact) = &mut self.contact {
            contact.frame(frame)?;
        }
        if let Some(steps) = &mut self.steps {
            steps.frame(frame)?;
        }
        let events = frame.source.work_done();
        let rate = events as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        self.progress.set_position(frame.index + 1);
        self.progress
            .set_message(format!("t = {:.3} s  {:.0} events/s", frame.time, rate));
        Ok(())
    }
}

fn info(mut args: InfoArgs) -> Result<(), Failure> {
    args.profile = find_profile(args.profile);
    let scene = load(Some(&args.profile), &args.overrides)?;
    if scene.integrator.method == Method::Oba {
        let sim = acm::rigid::ObaSimulation::new(&scene)
            .map_err(|e| bad_scene(&source(Some(&args.profile)), e))?;
        print!("{}", sim.describe(&scene));
        return Ok(());
    }
    let sim = Simulation::new(&scene).map_err(|e| bad_scene(&source(Some(&args.profile)), e))?;
    let s = sim.run_stats();
    let state = sim.model().state();
    println!(
        "scene {:?}: {} s, frame every {} s ({} frames)",
        scene.name,
        scene.duration,
        scene.frame_interval,
        scene.frame_count()
    );
    for (o, range) in scene.objects.iter().zip(sim.model().objects()) {
        let first = range.first_vertex as usize;
        let masses = &state.mass[first..first + range.vertex_count as usize];
        let total: f64 = masses.iter().sum();
        println!(
            "  object {:?}: {} vertices, {} triangles, mass {:.6} g{}",
            o.name,
            range.vertex_count,
            range.triangle_count,
            total,
            if o.fixed { " (fixed)" } else { "" }
        );
    }
    let free_masses = state
        .inv_mass
        .iter()
        .zip(&state.mass)
        .filter(|(&w, _)| w > 0.0)
        .map(|(_, &m)| m);
    let (lo, hi) = free_masses.fold((f64::INFINITY, 0.0f64), |(lo, hi), m| {
        (lo.min(m), hi.max(m))
    });
    println!(
        "  vertices: {} ({} free), triangles: {}, vertex mass {:.3e} .. {:.3e} g",
        s.model.vertices, s.model.free_vertices, s.model.triangles, lo, hi
    );
    let range = |r: Option<acm::model::ClockRange>| match r {
        Some(r) => format!("clock {:.3e} .. {:.3e} s", r.min, r.max),
        None => "none".to_string(),
    };
    println!(
        "  springs: {}, {}",
        s.model.springs,
        range(s.clocks.stretching)
    );
    println!("  hinges: {}, {}", s.model.hinges, range(s.clocks.bending));
    println!(
        "  gravity and prescribed forces: clock {:.3e} s",
        s.clocks.external
    );
    println!("  force events on the queue: {}", s.model.force_events);
    let c = &scene.contact;
    if c.enabled {
        let schedule = c.schedule().map_err(|e| Failure::BadInput(e.to_string()))?;
        let h1 = schedule.clock(1, lo, c.safety);
        println!(
            "  contact: eta1 {} cm, r1 {}, cor {}, friction {}; layer 1 clock {h1:.3e} s, \
             layer 10 clock {:.3e} s",
            c.eta1,
            c.r1,
            c.cor,
            c.friction,
            schedule.clock_by(c.clocks, 10, lo, c.safety)
        );
    } else {
        println!("  contact: off");
    }
    if scene.integrator.method == Method::Implicit {
        let sim = ImplicitSimulation::new(&scene)
            .map_err(|e| Failure::BadInput(format!("{}: {e}", scene.name)))?;
        let s = sim.stats();
        println!(
            "  integrator: implicit, step {:.3e} s, delta {} cm, friction {}",
            s.step, s.delta, s.friction
        );
    }
    if scene.integrator.method == Method::Sync {
        let sync = SyncSimulation::new(&scene)
            .map_err(|e| Failure::BadInput(format!("{}: {e}", scene.name)))?;
        let s = sync.stats();
        println!(
            "  integrator: sync, step {:.3e} s, thickness {} cm, fail-safe {}",
            s.step, s.thickness, s.failsafe
        );
    }
    Ok(())
}

fn plot(dir: &Path) -> Result<(), Failure> {
    let plotted = plot::plot_dir(dir).map_err(|e| Failure::BadInput(e.to_string()))?;
    for path in &plotted.written {
        println!("wrote {}", path.display());
    }
    for why in &plotted.skipped {
        println!("skipped {why}");
    }
    Ok(())
}

fn check(args: CheckArgs) -> Result<(), Failure> {
    if args.cutoff.is_nan() || args.cutoff < 0.0 {
        return Err(Failure::BadInput(format!(
            "--cutoff must be >= 0, got {}",
            args.cutoff
        )));
    }
    let set = FrameSet::list(&args.dir).map_err(Failure::BadInput)?;
    let mut report = acm::check::AuditReport::default();
    let mut triangles: Option<Vec<[u32; 3]>> = None;
    for (index, path) in set.paths.iter().enumerate() {
        let name = path.display().to_string();
        let (mesh, _) = set.read(index).map_err(Failure::BadInput)?;
        match &triangles {
            Some(t) if *t != mesh.triangles => {
                return Err(Failure::BadInput(format!(
                    "{name}: the faces differ from the first frame's; a sequence must keep its topology"
                )))
            }
            Some(_) => {}
            None => triangles = Some(mesh.triangles.clone()),
        }
        acm::check::audit_positions(
            &mesh.positions,
            &mesh.triangles,
            args.cutoff,
            index as u64,
            &mut report,
        )
        .map_err(|e| Failure::BadInput(format!("{name}: {e}")))?;
    }
    let json = serde_json::to_string(&report).map_err(|e| Failure::Internal(e.to_string()))?;
    println!("{json}");
    if report.intersecting_pairs > 0 {
        Err(Failure::Intersecting)
    } else {
        Ok(())
    }
}

/// `acm view`: the run's frames as one HTML page.
fn view(args: ViewArgs) -> Result<(), Failure> {
    let set = FrameSet::list(&args.dir).map_err(Failure::BadInput)?;
    let out = args.out.unwrap_or_else(|| args.dir.join("view.html"));
    let mut page = Vec::new();
    view::page::write_page(&set, &mut page).map_err(Failure::BadInput)?;
    acm::output::write_whole(&out, |w| w.write_all(&page))
        .map_err(|e| Failure::BadInput(format!("could not write {e}")))?;
    println!(
        "wrote {} ({} frames, {:.1} MB): open it in a browser",
        out.display(),
        set.paths.len(),
        page.len() as f64 / 1e6
    );
    Ok(())
}

/// `acm render`: one frame as a shaded PNG.
fn render(args: RenderArgs) -> Result<(), Failure> {
    let size = args
        .size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<usize>().ok()?, h.parse::<usize>().ok()?)))
        .filter(|&(w, h)| (1..=8192).contains(&w) && (1..=8192).contains(&h))
        .ok_or_else(|| {
            Failure::BadInput(format!(
                "--size {}: expected WIDTHxHEIGHT, each 1 to 8192 pixels (e.g. 960x720)",
                args.size
            ))
        })?;
    let set = FrameSet::list(&args.dir).map_err(Failure::BadInput)?;
    let last = set.paths.len() - 1;
    let index = match args.frame {
        None => last,
        Some(n) if (0..=last as i64).contains(&n) => n as usize,
        Some(n) => {
            return Err(Failure::BadInput(format!(
                "--frame {n}: {} holds frames 0 to {last}",
                args.dir.display()
            )))
        }
    };
    let (mesh, spans) = set.read(index).map_err(Failure::BadInput)?;
    let spans = view::frames::spans_or_whole(spans, mesh.positions.len());
    let picture = view::raster::render(&mesh, &spans, size.0, size.1);
    let out = args
        .out
        .unwrap_or_else(|| args.dir.join(format!("frame_{index:05}.png")));
    acm::output::write_whole(&out, |w| picture.write_png(w))
        .map_err(|e| Failure::BadInput(format!("could not write {e}")))?;
    println!(
        "wrote {} (frame {index}, {}x{})",
        out.display(),
        size.0,
        size.1
    );
    Ok(())
}
