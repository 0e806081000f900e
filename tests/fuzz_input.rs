//! Structure-aware fuzzing of profiles and OBJ meshes: valid inputs mutated value by value and
//! line by line. Whatever the input, loading never panics, a rejected input comes with a
//! message, and an accepted one runs its first events with a finite state (or stops with a
//! clean error).
//!
//! CI runs a fixed seed and budget; a longer run: `ACM_FUZZ_CASES=20000 ACM_FUZZ_SEED=7 cargo
//! test --release --test fuzz_input`.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use acm::prelude::{FrameSource, Stepper};
use acm::scene::profile;
use acm::{NoFrames, Simulation};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// A valid profile touching most of the schema: a fixed floor, an OBJ object with contact, a
/// sheet with a script and a fixed corner.
const BASE_PROFILE: &str = r#"[scene]
name = "fuzz"
duration = 0.02
frame_interval = 0.01
gravity = [0.0, -981.0, 0.0]

[integrator]
safety = 0.5

[[object]]
name = "floor"
mesh = { generator = "sheet", nx = 3, ny = 3, width = 10.0, depth = 10.0 }
fixed = true

[[object]]
name = "chip"
mesh = { generator = "obj", path = "m.obj" }
translate = [0.0, 1.0, 0.0]
velocity = [0.0, -50.0, 0.0]

[object.material]
density = 0.001
stretch = 1000.0
bend = 0.1

[[object]]
name = "sheet"
mesh = { generator = "sheet", nx = 4, ny = 4, width = 4.0, depth = 4.0 }
translate = [0.0, 3.0, 0.0]

[object.material]
density = 0.001
stretch = 500.0
bend = 0.05
stretch_damping = 0.1

[[fixed]]
object = "sheet"
select = { vertices = [0] }

[[script]]
object = "sheet"
select = { vertices = [15] }
keys = [{ time = 0.0, velocity = [0.0, 1.0, 0.0] }]

[contact]
eta1 = 0.05
r1 = 1000.0
cor = 0.5
friction = 0.1
"#;

/// A valid OBJ mesh: a unit square of two triangles.
const BASE_OBJ: &str = "v 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\nf 1 2 3\nf 1 3 4\n";

/// Values a mutation writes in place of a profile value, by the type of the value replaced.
const NUMBERS: &[&str] = &[
    "0.1",
    "1.0",
    "10.0",
    "100",
    "3",
    "5",
    "0.001",
    "0",
    "-1",
    "2",
    "1e-300",
    "1e300",
    "-1e300",
    "1e16",
    "nan",
    "inf",
    "-inf",
    "0.5",
    "4294967295",
    "18446744073709551616",
];
const VECTORS: &[&str] = &[
    "[0.0, 0.0, 0.0]",
    "[1.0, 2.0, 3.0]",
    "[0.0, 5.0, 0.0]",
    "[0.0, -1e3, 0.0]",
    "[0.0, 1.0]",
    "[1e308, 1e308, 1e308]",
    "[0.0, -1e11, 0.0]",
    "[]",
    "[[1]]",
    "[nan, 0, 0]",
];
const STRINGS: &[&str] = &[
    "\"sheet\"",
    "\"\"",
    "\"obj\"",
    "\"none\"",
    "\"kdop18\"",
    "\"grid\"",
    "\"sync\"",
    "\"chip\"",
    "\"floor\"",
    "\"a b\"",
];
const OTHERS: &[&str] = &[
    "true",
    "false",
    "{}",
    "{ all = true }",
    "{ vertices = [99] }",
    "{ vertices = [1, 2] }",
];

/// The pool a replacement of `old` draws from: values of its own type three times in four.
fn pool_for(old: &str, pick: usize) -> &'static [&'static str] {
    if pick % 4 == 0 {
        return [NUMBERS, VECTORS, STRINGS, OTHERS][pick / 4 % 4];
    }
    match old.trim_start().chars().next() {
        Some('[') => VECTORS,
        Some('"') => STRINGS,
        Some('{' | 't' | 'f') => OTHERS,
        _ => NUMBERS,
    }
}

/// Lines a mutation may insert.
const LINES: &[&str] = &[
    "[[object]]",
    "name = \"extra\"",
    "fixed = true",
    "mesh = { generator = \"icosphere\", radius = 1.0, subdivisions = 1 }",
    "mesh = { generator = \"particle\", mass = 0.01 }",
    "[speed]",
    "preset = \"none\"",
    "[sync]",
    "[[force]]",
    "replicate = { count = [2, 1, 1], spacing = [5.0, 0.0, 0.0] }",
    "rotate = [0.0, 90.0, 0.0]",
    "scale = 0.0",
    "method = \"sync\"",
    "clock = 1e-9",
    "broad_phase = \"swept_boxes\"",
];

/// Coordinates (and indices) an OBJ mutation writes.
const COORDINATES: &[&str] = &[
    "0", "1", "-1", "0.5", "2", "0.25", "-0.5", "3", "0.75", "4", "1e-300", "1e300", "1e10", "nan",
    "inf", "x", "", "1 2", "-2", "9",
];

/// The OBJ pool, whatever the field replaced.
fn coordinates(_: &str, _: usize) -> &'static [&'static str] {
    COORDINATES
}

/// One edit of a text, as line operations.
#[derive(Clone, Debug)]
enum Edit {
    /// Replace the value after `=` on line `line` (mod the line count).
    Value { line: usize, value: usize },
    /// Remove a line.
    Remove { line: usize },
    /// Repeat a line.
    Repeat { line: usize },
    /// Insert one of [`LINES`] before a line.
    Insert { line: usize, text: usize },
    /// Cut the text after this fraction of its bytes.
    Truncate { per_mille: u16 },
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        8 => (any::<usize>(), any::<usize>()).prop_map(|(line, value)| Edit::Value { line, value }),
        2 => any::<usize>().prop_map(|line| Edit::Remove { line }),
        1 => any::<usize>().prop_map(|line| Edit::Repeat { line }),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(line, text)| Edit::Insert { line, text }),
        1 => (0u16..1000).prop_map(|per_mille| Edit::Truncate { per_mille }),
    ]
}

/// Applies `edits` to `text`; `values` chooses the pool a `Value` edit draws from, given the
/// value it replaces and a random number.
fn mutate(
    text: &str,
    edits: &[Edit],
    values: fn(&str, usize) -> &'static [&'static str],
) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for e in edits {
        let n = lines.len().max(1);
        match *e {
            Edit::Value { line, value } => {
                if let Some(l) = lines.get_mut(line % n) {
                    *l = match l.split_once('=') {
                        Some((key, old)) => {
                            let pool = values(old, value);
                            format!("{key}= {}", pool[value / 16 % pool.len()])
                        }
                        // An OBJ line: replace its last field.
                        None => {
                            let (head, old) = l.rsplit_once(' ').unwrap_or(("", l));
                            let pool = values(old, value);
                            format!("{head} {}", pool[value / 16 % pool.len()])
                        }
                    };
                }
            }
            Edit::Remove { line } => {
                if !lines.is_empty() {
                    lines.remove(line % n);
                }
            }
            Edit::Repeat { line } => {
                if let Some(l) = lines.get(line % n).cloned() {
                    lines.insert(line % n, l);
                }
            }
            Edit::Insert { line, text } => lines.insert(line % n, LINES[text % LINES.len()].into()),
            Edit::Truncate { per_mille } => {
                let joined = lines.join("\n");
                let mut cut = joined.len() * per_mille as usize / 1000;
                while !joined.is_char_boundary(cut) {
                    cut -= 1;
                }
                lines = joined[..cut].lines().map(str::to_string).collect();
            }
        }
    }
    lines.join("\n") + "\n"
}

/// How many cases got as far as a built simulation, per test.
#[derive(Default)]
struct Reached {
    simulations: AtomicUsize,
}

/// Loads `profile` (with `m.obj` = `obj`) and, if accepted, runs its first events: panics only
/// where the engine would.
fn load_and_step(
    dir: &Path,
    profile: &str,
    obj: &str,
    reached: &Reached,
) -> Result<(), TestCaseError> {
    std::fs::write(dir.join("m.obj"), obj).unwrap();
    let scene = match profile::parse(profile, "p.toml", dir, &[]) {
        Ok(scene) => scene,
        Err(e) => {
            prop_assert!(!e.message.trim().is_empty(), "empty message: {e:?}");
            return Ok(());
        }
    };
    let mut sim = match Simulation::new(&scene) {
        Ok(sim) => sim,
        Err(e) => {
            prop_assert!(!e.message.trim().is_empty(), "empty message: {e:?}");
            return Ok(());
        }
    };
    reached.simulations.fetch_add(1, Ordering::Relaxed);
    for _ in 0..300 {
        match sim.step(&mut NoFrames) {
            Ok(Some(_)) => {}
            Ok(None) => break,
            // A clean stop (diverged, no progress, ...) with its message is an answer too.
            Err(e) => {
                prop_assert!(!e.to_string().trim().is_empty());
                return Ok(());
            }
        }
    }
    let mut positions = Vec::new();
    sim.model().positions_at(sim.time(), &mut positions);
    prop_assert!(positions.iter().all(|p| p.is_finite()), "non-finite state");
    Ok(())
}

fn runner() -> TestRunner {
    let var = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let seed = var("ACM_FUZZ_SEED", 1).to_le_bytes().repeat(4);
    let config = Config {
        cases: var("ACM_FUZZ_CASES", 300) as u32,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed))
}

/// Fuzzes with inputs from `input`; asserts that at least one case in twenty was accepted and
/// run, so that the engine, not only the parser, is exercised (over 20,000 cases, 8% of the
/// profile mutations and more of the mesh mutations are).
fn fuzz(input: impl Fn(&[Edit]) -> (String, String), max_edits: usize) {
    let dir = tempfile::tempdir().unwrap();
    let reached = Reached::default();
    let mut runner = runner();
    runner
        .run(&prop::collection::vec(edit(), 1..max_edits), |edits| {
            let (profile, obj) = input(&edits);
            load_and_step(dir.path(), &profile, &obj, &reached)
        })
        .unwrap();
    let simulations = reached.simulations.load(Ordering::Relaxed);
    let cases = runner.config().cases as usize;
    assert!(
        simulations * 20 >= cases,
        "{simulations} of {cases} cases ran"
    );
}

#[test]
fn mutated_profiles_never_panic() {
    fuzz(
        |edits| (mutate(BASE_PROFILE, edits, pool_for), BASE_OBJ.to_string()),
        4,
    );
}

#[test]
fn mutated_meshes_never_panic() {
    fuzz(
        |edits| {
            (
                BASE_PROFILE.to_string(),
                mutate(BASE_OBJ, edits, coordinates),
            )
        },
        5,
    );
}

#[test]
fn the_unmutated_inputs_are_accepted_and_run() {
    // The base must be valid, or every mutation above would only test the first error.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.obj"), BASE_OBJ).unwrap();
    let scene = profile::parse(BASE_PROFILE, "p.toml", dir.path(), &[]).unwrap();
    let mut sim = Simulation::new(&scene).unwrap();
    sim.run_until(0.005, &mut NoFrames).unwrap();
    assert!(sim.stats().events_total > 10, "{:?}", sim.stats().events);
}
