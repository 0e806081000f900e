//! Profile files: TOML -> [`Scene`], with errors that name the file, line and field.
//!
//! The schema is documented in `profiles/README.md`. Loading goes in three steps:
//! 1. `--set key.path=value` overrides are applied to the TOML document (`apply_override`);
//! 2. the document is deserialized into the schema below (unknown keys, wrong types and missing
//!    fields are rejected by serde with a line number);
//! 3. meshes are generated or read, placed, selections resolved, and the [`Scene`] validated;
//!    a validation error's field path is located in the document to give its line.

use std::ops::Range;
use std::path::{Path, PathBuf};

use glam::{DQuat, DVec3, EulerRot};
use serde::Deserialize;

use super::description::Scene;
use super::error::SceneError;
use super::implicit_settings::ImplicitSettings;
use super::method::Method;
use super::objects::{ForceSpec, Material, SceneObject, ScriptSpec, VertexSet};
use super::settings::{ContactScheduler, ContactSettings, IntegratorSettings};
use super::speed::SpeedSettings;
use super::sync_settings::{FailSafe, OnUnresolved, SyncSettings};
use crate::kds::BroadPhaseKind;
use crate::mesh::{self, TriMesh};
use crate::penalty::layers::LayerClocks;

/// A profile that could not be loaded: which file, which line (when known), what is wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ProfileError {
    /// The profile's path as given (or `<built-in>`).
    pub file: String,
    /// 1-based line of the offending entry, when it can be located.
    pub line: Option<usize>,
    /// What is wrong, starting with the field path when there is one.
    pub message: String,
}

/// Loads the profile at `path`, applying `overrides` (`key.path=value` strings) first.
pub fn load(path: &Path, overrides: &[String]) -> Result<Scene, ProfileError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ProfileError {
        file: file.clone(),
        line: None,
        message: format!("cannot read the profile: {e}"),
    })?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse(&text, &file, &base, overrides)
}

/// How messages name the built-in default scene.
pub const BUILTIN_NAME: &str = "<built-in sheet_on_sphere>";

/// The built-in default scene ([`crate::DEFAULT_PROFILE`]), applying `overrides` first.
pub fn builtin(overrides: &[String]) -> Result<Scene, ProfileError> {
    parse(
        crate::DEFAULT_PROFILE,
        BUILTIN_NAME,
        Path::new("."),
        overrides,
    )
}

/// Parses profile `text`; `file` names it in errors and `base` resolves relative mesh paths.
///
/// An error caused by a `--set` override names the flag (`--set scene.durration=1: unknown
/// field ...`); any other names the line of `text` it comes from.
pub fn parse(
    text: &str,
    file: &str,
    base: &Path,
    overrides: &[String],
) -> Result<Scene, ProfileError> {
    let error = |line: Option<usize>, message: String| ProfileError {
        file: file.to_string(),
        line,
        message,
    };
    let doc_error =
        |e: toml_edit::TomlError| error(line_of_span(text, e.span()), e.message().to_string());
    let (rewritten, set) = if overrides.is_empty() {
        (text.to_string(), Vec::new())
    } else {
        let mut doc: toml_edit::DocumentMut = text.parse().map_err(doc_error)?;
        let mut set = Vec::with_capacity(overrides.len());
        for o in overrides {
            let path = apply_override(&mut doc, &expand_shorthand(o))
                .map_err(|m| error(None, format!("--set {o}: {m}")))?;
            set.push((o.as_str(), path));
        }
        (doc.to_string(), set)
    };
    let schema: ProfileFile = toml::from_str(&rewritten).map_err(|e| {
        let message = plain_types(e.message().trim());
        match first_bad_override(text, overrides) {
            Some(o) => error(None, format!("--set {o}: {message}")),
            None => error(line_of_span(&rewritten, e.span()), message),
        }
    })?;
    // A scene error's path is blamed on the override that set it, or located in the file; an
    // object's path also gives the object's name.
    let names: Vec<String> = schema.objects.iter().map(|o| o.name.clone()).collect();
    let body_names: Vec<String> = schema.bodies.iter().map(|b| b.name().to_string()).collect();
    let scene_error = |e: SceneError| {
        let named = format!(
            "{}: {}",
            name_entry(&name_entry(&e.path, "object", &names), "body", &body_names),
            e.message
        );
        match set
            .iter()
            .find(|(_, path)| within(&e.path, path) || within(path, &e.path))
        {
            Some((o, _)) => error(None, format!("--set {o}: {named}")),
            None => error(locate(text, &e.path), named),
        }
    };
    let (scene, origin, body_origin) = schema.into_scene(base).map_err(scene_error)?;
    // The intersection test of `Scene::validate` is left to the integrator's constructor, so a
    // large scene pays for it once.
    scene.validate_fields().map_err(|e| {
        let path = profile_path(
            &profile_path(&e.path, "object", &origin),
            "body",
            &body_origin,
        );
        scene_error(SceneError::new(path, e.message))
    })?;
    Ok(scene)
}

/// `integrator=sync` is short for `integrator.method=sync`.
fn expand_shorthand(spec: &str) -> String {
    match spec.split_once('=') {
        Some((key, value)) if key.trim() == "integrator" => format!("integrator.method={value}"),
        _ => spec.to_string(),
    }
}

/// The first override after which `text` no longer deserializes (`None` when `text` itself
/// does not: the error is the file's own).
fn first_bad_override<'a>(text: &str, overrides: &'a [String]) -> Option<&'a str> {
    let fits = |doc: &str| toml::from_str::<ProfileFile>(doc).is_ok();
    if !fits(text) {
        return None;
    }
    let mut doc: toml_edit::DocumentMut = text.parse().ok()?;
    overrides.iter().find_map(|o| {
        apply_override(&mut doc, &expand_shorthand(o)).ok()?;
        (!fits(&doc.to_string())).then_some(o.as_str())
    })
}

/// Field path `path` with the name of the `[[kind]]` entry (`object`, `body`) it starts in,
/// when it does: `object[1].material.density (object "sheet")`.
fn name_entry(path: &str, kind: &str, names: &[String]) -> String {
    let entry = path
        .strip_prefix(kind)
        .and_then(|rest| rest.strip_prefix('['))
        .and_then(|rest| rest.split_once(']'))
        .and_then(|(i, _)| names.get(i.parse::<usize>().ok()?));
    match entry {
        Some(name) => format!("{path} ({kind} {name:?})"),
        None => path.to_string(),
    }
}

/// Whether field path `path` lies at or below `prefix` (`object[0].material` holds
/// `object[0].material.density`).
fn within(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// Deserialization messages in a user's words: `expected f64` becomes `expected a number`.
fn plain_types(message: &str) -> String {
    [
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected u64", "expected a whole number >= 0"),
        ("expected u32", "expected a whole number >= 0"),
        ("expected usize", "expected a whole number >= 0"),
        ("expected u8", "expected a whole number >= 0"),
    ]
    .iter()
    .fold(message.to_string(), |m, (rust, words)| {
        m.replace(rust, words)
    })
}

/// Rewrites a scene field path `kind[i]...` (`object`, `body`) to the `[[kind]]` entry item
/// `i` came from (`origin[i]`), which differs once a `replicate` table has expanded an entry
/// into copies.
fn profile_path(path: &str, kind: &str, origin: &[usize]) -> String {
    let entry = path
        .strip_prefix(kind)
        .and_then(|rest| rest.strip_prefix('['))
        .and_then(|rest| rest.split_once(']'))
        .and_then(|(i, rest)| Some((origin.get(i.parse::<usize>().ok()?)?, rest)));
    match entry {
        Some((entry, rest)) => format!("{kind}[{entry}]{rest}"),
        None => path.to_string(),
    }
}

/// Applies one `key.path=value` override to a TOML document.
///
/// Path segments are table keys; in an array of tables a segment is either an index
/// (`object.0.material.density`, or `object[0]...`) or the `name` of an entry
/// (`object.sheet.material.density`). Missing tables and the final key are created. The value
/// is parsed as TOML (`2.5`, `true`, `[0, 1, 0]`, `"text"`); anything else is taken as a string.
/// Returns the field path that was set, with entries by index (`object[0].material.density`).
pub(crate) fn apply_override(
    doc: &mut toml_edit::DocumentMut,
    spec: &str,
) -> Result<String, String> {
    let (path, raw) = spec
        .split_once('=')
        .ok_or("expected key.path=value".to_string())?;
    let segments: Vec<String> = path
        .replace('[', ".")
        .replace(']', "")
        .split('.')
        .map(|s| s.trim().to_string())
        .collect();
    if segments.iter().any(String::is_empty) {
        return Err(format!("malformed key path {path:?}"));
    }
    let value = parse_value(raw.trim());
    let (last, parents) = segments.split_last().expect("split yields one segment");
    let mut table = doc.as_table_mut();
    let mut field = Vec::with_capacity(segments.len());
    let mut i = 0;
    while i < parents.len() {
        let key = &parents[i];
        let item = table
            .entry(key)
            .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
        if item.is_array_of_tables() {
            let array = item
                .as_array_of_tables_mut()
                .expect("checked to be an array of tables");
            let Some(selector) = parents
                .get(i + 1)
                .or((i + 1 == parents.len()).then_some(last))
            else {
                return Err(format!("{key} is a list: name an entry by index or name"));
            };
            if i + 1 == parents.len() {
                return Err(format!(
                    "{key}.{selector}: a list entry cannot be replaced by a value"
                ));
            }
            let position = selector.parse::<usize>().ok().or_else(|| {
                array
                    .iter()
                    .position(|t| t.get("name").and_then(|n| n.as_str()) == Some(selector))
            });
            let len = array.len();
            let (position, entry) = position
                .and_then(|p| Some((p, array.get_mut(p)?)))
                .ok_or(format!("{key} has no entry {selector:?} ({len} entries)"))?;
            field.push(format!("{key}[{position}]"));
            table = entry;
            i += 2;
        } else {
            // An inline table (`mesh = { generator = "sheet", ... }`) becomes a standard one so
            // that its keys can be overridden like any other.
            if let Some(inline) = item.as_inline_table_mut() {
                let standard = std::mem::take(inline).into_table();
                *item = toml_edit::Item::Table(standard);
            }
            table = item.as_table_mut().ok_or(format!("{key} is not a table"))?;
            field.push(key.clone());
            i += 1;
        }
    }
    table[last.as_str()] = toml_edit::Item::Value(value);
    field.push(last.clone());
    Ok(field.join("."))
}

fn parse_value(raw: &str) -> toml_edit::Value {
    format!("v = {raw}")
        .parse::<toml_edit::DocumentMut>()
        .ok()
        .and_then(|d| d.get("v").and_then(|v| v.as_value()).cloned())
        .unwrap_or_else(|| raw.into())
}

/// The 1-based line of a byte span.
fn line_of_span(text: &str, span: Option<Range<usize>>) -> Option<usize> {
    let start = span?.start.min(text.len());
    Some(text[..start].matches('\n').count() + 1)
}

/// The line of a field path like `object[1].material.density`, or of its longest existing prefix.
fn locate(text: &str, path: &str) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let mut best: Option<Range<usize>> = None;
    let mut item: Option<&toml_edit::Item> = None;
    let mut table: Option<&toml_edit::Table> = Some(doc.as_table());
    for segment in path.split('.') {
        let (key, index) = match segment.split_once('[') {
            Some((k, rest)) => (k, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (segment, None),
        };
        let next = match (item, table) {
            (_, Some(t)) => t.get(key),
            (Some(i), None) => i.get(key),
            _ => None,
        };
        let Some(next) = next else { break };
        item = Some(next);
        table = None;
        best = next.span().or(best);
        if let Some(index) = index {
            if let Some(aot) = next.as_array_of_tables() {
                let Some(t) = aot.get(index) else { break };
                best = t.span().or(best);
                table = Some(t);
            } else if let Some(array) = next.as_array() {
                let Some(v) = array.get(index) else { break };
                best = v.span().or(best);
                if let Some(t) = v.as_inline_table() {
                    best = t.span().or(best);
                }
                break;
            }
        } else if let Some(t) = next.as_table() {
            table = Some(t);
        }
    }
    line_of_span(text, best)
}

// ---------------------------------------------------------------------------------------------
// The schema (documented in profiles/README.md).

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    scene: SceneTable,
    #[serde(default)]
    integrator: IntegratorTable,
    #[serde(default, rename = "object")]
    objects: Vec<ObjectTable>,
    #[serde(default)]
    fixed: Vec<FixedTable>,
    #[serde(default, rename = "script")]
    scripts: Vec<ScriptTable>,
    #[serde(default, rename = "force")]
    forces: Vec<ForceTable>,
    #[serde(default)]
    contact: ContactTable,
    #[serde(default)]
    sync: SyncTable,
    #[serde(default)]
    implicit: ImplicitTable,
    #[serde(default)]
    speed: SpeedTable,
    #[serde(default, rename = "body")]
    bodies: Vec<super::rigid_profile::BodyTable>,
    #[serde(default, rename = "joint")]
    joints: Vec<super::rigid_profile::JointTable>,
    #[serde(default)]
    oba: super::rigid_profile::ObaTable,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SceneTable {
    name: String,
    duration: f64,
    frame_interval: f64,
    #[serde(default = "default_gravity")]
    gravity: [f64; 3],
}

fn default_gravity() -> [f64; 3] {
    Scene::default().gravity.to_array()
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct IntegratorTable {
    method: Option<MethodName>,
    /// Replaced by `speed.super_elements`; kept only to say so.
    grouping: Option<toml::Value>,
    safety: Option<f64>,
    clock: Option<f64>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum MethodName {
    Acm,
    Sync,
    Implicit,
    Oba,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ImplicitTable {
    step: Option<f64>,
    delta: Option<f64>,
    friction: Option<f64>,
    max_cmr_iterations: Option<u32>,
    max_halvings: Option<u32>,
    max_ica_iterations: Option<u32>,
    max_pgs_sweeps: Option<u32>,
    ica_tolerance: Option<f64>,
    cg_tolerance: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct SyncTable {
    step: Option<f64>,
    thickness: Option<f64>,
    stiffness: Option<f64>,
    friction: Option<f64>,
    max_ccd_iterations: Option<u32>,
    max_failsafe_iterations: Option<u32>,
    failsafe: Option<FailSafeName>,
    on_unresolved: Option<OnUnresolvedName>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum FailSafeName {
    ImpactZones,
    InelasticProjection,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum OnUnresolvedName {
    Stop,
    Continue,
}

/// `[speed]`: a preset, then any switch set on its own (see [`SpeedSettings`]).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct SpeedTable {
    preset: Option<PresetName>,
    super_elements: Option<bool>,
    clock_bins: Option<bool>,
    layer_super_events: Option<bool>,
    axis_ordering: Option<bool>,
    fuzzy_trajectories: Option<bool>,
    quality_loss: Option<f64>,
    parking: Option<bool>,
    short_circuit: Option<bool>,
    triangle_pairs: Option<bool>,
}

/// `speed.preset` values.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum PresetName {
    None,
    All,
}

impl SpeedTable {
    /// The preset (without one, [`SpeedSettings::DEFAULT`]) with the switches given on their
    /// own applied over it.
    fn settings(&self) -> SpeedSettings {
        let mut speed = match self.preset {
            Some(PresetName::None) => SpeedSettings::NONE,
            Some(PresetName::All) => SpeedSettings::ALL,
            None => SpeedSettings::DEFAULT,
        };
        let given = [
            self.super_elements,
            self.clock_bins,
            self.layer_super_events,
            self.axis_ordering,
            self.fuzzy_trajectories,
            self.parking,
            self.short_circuit,
            self.triangle_pairs,
        ];
        for (name, value) in SpeedSettings::NAMES.into_iter().zip(given) {
            if let (Some(flag), Some(value)) = (speed.flag_mut(name), value) {
                *flag = value;
            }
        }
        if let Some(ql) = self.quality_loss {
            speed.quality_loss = ql;
        }
        speed
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObjectTable {
    name: String,
    mesh: MeshSpec,
    material: Option<MaterialTable>,
    #[serde(default)]
    fixed: bool,
    #[serde(default)]
    translate: [f64; 3],
    /// Degrees about x, then y, then z.
    #[serde(default)]
    rotate: [f64; 3],
    #[serde(default)]
    scale: Option<ScaleSpec>,
    #[serde(default)]
    velocity: [f64; 3],
    replicate: Option<ReplicateTable>,
}

/// `replicate = { count, spacing, speed, seed }`: copies of one object on a grid, each with its
/// own seeded random velocity (documented in profiles/README.md).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplicateTable {
    count: [usize; 3],
    spacing: [f64; 3],
    #[serde(default)]
    speed: f64,
    #[serde(default)]
    seed: u64,
}

/// Most copies one `replicate` table may make.
const MAX_COPIES: usize = 100_000;

/// How many copies a `replicate` table's `count` (at `path`) makes: the product of its three
/// counts, each at least 1, at most [`MAX_COPIES`] in all.
pub(crate) fn replicate_total(count: [usize; 3], path: &str) -> Result<usize, SceneError> {
    let [nx, ny, nz] = count;
    nx.checked_mul(ny)
        .and_then(|n| n.checked_mul(nz))
        .filter(|&n| (1..=MAX_COPIES).contains(&n))
        .ok_or_else(|| {
            SceneError::new(
                path,
                format!("each count must be >= 1 and their product <= {MAX_COPIES}, got {count:?}"),
            )
        })
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScaleSpec {
    Uniform(f64),
    PerAxis([f64; 3]),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MaterialTable {
    density: f64,
    stretch: f64,
    #[serde(default)]
    stretch_damping: f64,
    bend: f64,
    #[serde(default)]
    bend_damping: f64,
    #[serde(default)]
    drag: f64,
}

#[derive(Deserialize)]
#[serde(tag = "generator", rename_all = "snake_case", deny_unknown_fields)]
enum MeshSpec {
    Sheet {
        nx: usize,
        ny: usize,
        width: f64,
        depth: f64,
    },
    Ribbon {
        points: Vec<[f64; 3]>,
        width: f64,
        along: usize,
        across: usize,
        #[serde(default)]
        twist: f64,
    },
    Icosphere {
        radius: f64,
        subdivisions: u32,
    },
    Box {
        size: [f64; 3],
        cells: usize,
    },
    Cylinder {
        radius: f64,
        height: f64,
        segments: usize,
        rings: usize,
        #[serde(default)]
        capped: bool,
    },
    Nails {
        rows: usize,
        cols: usize,
        spacing: f64,
        height: f64,
        base: f64,
    },
    LumpySphere {
        radius: f64,
        cells: usize,
        #[serde(default)]
        noise: f64,
        #[serde(default)]
        seed: u64,
    },
    Obj {
        path: String,
    },
    Particle {
        mass: f64,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Selection {
    vertices: Option<Vec<u32>>,
    #[serde(rename = "box")]
    region: Option<BoxTable>,
    all: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoxTable {
    min: [f64; 3],
    max: [f64; 3],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixedTable {
    object: String,
    select: Selection,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptTable {
    object: String,
    select: Selection,
    keys: Vec<KeyTable>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyTable {
    time: f64,
    velocity: [f64; 3],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForceTable {
    object: String,
    select: Selection,
    force: [f64; 3],
    #[serde(default)]
    start: f64,
    #[serde(default = "infinity")]
    end: f64,
}

fn infinity() -> f64 {
    f64::INFINITY
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ContactTable {
    #[serde(default = "yes")]
    enabled: bool,
    eta1: Option<f64>,
    r1: Option<f64>,
    cor: Option<f64>,
    friction: Option<f64>,
    friction_cap: Option<bool>,
    eta_exponent: Option<f64>,
    r_exponent: Option<f64>,
    safety: Option<f64>,
    clocks: Option<ClocksName>,
    work_closure: Option<bool>,
    closure_forces: Option<bool>,
    closure_objects: Option<bool>,
    closure_restitution: Option<bool>,
    broad_phase: Option<BroadPhaseName>,
    scheduler: Option<SchedulerName>,
}

/// `contact.scheduler` values (see `ContactScheduler`).
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum SchedulerName {
    Kds,
    Speculative,
}

/// `contact.clocks` values (see `LayerClocks`).
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum ClocksName {
    Thesis,
    Stack,
}

impl From<ClocksName> for LayerClocks {
    fn from(name: ClocksName) -> Self {
        match name {
            ClocksName::Thesis => Self::Thesis,
            ClocksName::Stack => Self::Stack,
        }
    }
}

/// `contact.broad_phase` values (see `BroadPhaseKind`).
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum BroadPhaseName {
    Kdop18,
    Kdop18Lazy,
    Kdop26,
    Aabb,
    Spheres,
    Grid,
    SweptBoxes,
}

impl From<BroadPhaseName> for BroadPhaseKind {
    fn from(name: BroadPhaseName) -> Self {
        match name {
            BroadPhaseName::Kdop18 => Self::Kdop18,
            BroadPhaseName::Kdop18Lazy => Self::Kdop18Lazy,
            BroadPhaseName::Kdop26 => Self::Kdop26,
            BroadPhaseName::Aabb => Self::Aabb,
            BroadPhaseName::Spheres => Self::Spheres,
            BroadPhaseName::Grid => Self::Grid,
            BroadPhaseName::SweptBoxes => Self::SweptBoxes,
        }
    }
}

fn yes() -> bool {
    true
}

impl IntegratorTable {
    /// The settings this table gives, defaults where a key is missing.
    fn settings(&self) -> IntegratorSettings {
        IntegratorSettings {
            method: match self.method {
                Some(MethodName::Sync) => Method::Sync,
                Some(MethodName::Implicit) => Method::Implicit,
                Some(MethodName::Oba) => Method::Oba,
                Some(MethodName::Acm) | None => Method::Acm,
            },
            safety: self.safety.unwrap_or(IntegratorSettings::default().safety),
            clock: self.clock,
        }
    }
}

impl SyncTable {
    /// The settings this table gives, defaults where a key is missing.
    fn settings(&self) -> SyncSettings {
        let d = SyncSettings::default();
        SyncSettings {
            step: self.step,
            thickness: self.thickness,
            stiffness: self.stiffness,
            friction: self.friction,
            max_ccd_iterations: self.max_ccd_iterations.unwrap_or(d.max_ccd_iterations),
            max_failsafe_iterations: self
                .max_failsafe_iterations
                .unwrap_or(d.max_failsafe_iterations),
            failsafe: match self.failsafe {
                Some(FailSafeName::InelasticProjection) => FailSafe::InelasticProjection,
                Some(FailSafeName::ImpactZones) | None => FailSafe::ImpactZones,
            },
            on_unresolved: match self.on_unresolved {
                Some(OnUnresolvedName::Continue) => OnUnresolved::Continue,
                Some(OnUnresolvedName::Stop) | None => OnUnresolved::Stop,
            },
        }
    }
}

impl ImplicitTable {
    /// The settings this table gives, defaults where a key is missing.
    fn settings(&self) -> ImplicitSettings {
        let d = ImplicitSettings::default();
        ImplicitSettings {
            step: self.step,
            delta: self.delta,
            friction: self.friction,
            max_cmr_iterations: self.max_cmr_iterations.unwrap_or(d.max_cmr_iterations),
            max_halvings: self.max_halvings.unwrap_or(d.max_halvings),
            max_ica_iterations: self.max_ica_iterations.unwrap_or(d.max_ica_iterations),
            max_pgs_sweeps: self.max_pgs_sweeps.unwrap_or(d.max_pgs_sweeps),
            ica_tolerance: self.ica_tolerance.unwrap_or(d.ica_tolerance),
            cg_tolerance: self.cg_tolerance.unwrap_or(d.cg_tolerance),
        }
    }
}

impl ContactTable {
    /// The settings this table gives, defaults where a key is missing.
    fn settings(&self) -> ContactSettings {
        let c = ContactSettings::default();
        ContactSettings {
            enabled: self.enabled,
            eta1: self.eta1.unwrap_or(c.eta1),
            r1: self.r1.unwrap_or(c.r1),
            cor: self.cor.unwrap_or(c.cor),
            friction: self.friction.unwrap_or(c.friction),
            friction_cap: self.friction_cap.unwrap_or(c.friction_cap),
            eta_exponent: self.eta_exponent.unwrap_or(c.eta_exponent),
            r_exponent: self.r_exponent.unwrap_or(c.r_exponent),
            safety: self.safety.unwrap_or(c.safety),
            clocks: self.clocks.map_or(c.clocks, Into::into),
            work_closure: self.work_closure.unwrap_or(c.work_closure),
            closure_forces: self.closure_forces.unwrap_or(c.closure_forces),
            closure_objects: self.closure_objects.unwrap_or(c.closure_objects),
            closure_restitution: self.closure_restitution.unwrap_or(c.closure_restitution),
            broad_phase: self.broad_phase.map_or(c.broad_phase, Into::into),
            scheduler: match self.scheduler {
                Some(SchedulerName::Speculative) => ContactScheduler::Speculative,
                Some(SchedulerName::Kds) => ContactScheduler::Kds,
                None => c.scheduler,
            },
        }
    }
}

impl ProfileFile {
    /// The scene, and for each of its objects and bodies the index of the `[[object]]` or
    /// `[[body]]` entry it came from.
    fn into_scene(self, base: &Path) -> Result<(Scene, Vec<usize>, Vec<usize>), SceneError> {
        let defaults = Scene::default();
        if self.integrator.grouping.is_some() {
            return Err(SceneError::new(
                "integrator.grouping",
                "replaced by speed.super_elements (true: one event per force family, false: one \
                 event per element)",
            ));
        }
        let integrator = self.integrator.settings();
        let sync = self.sync.settings();
        let implicit = self.implicit.settings();
        let contact = self.contact.settings();
        let (rigid, body_origin) =
            super::rigid_profile::rigid_scene(self.bodies, self.joints, self.oba, base)?;
        let mut objects = Vec::new();
        let mut origin = Vec::new();
        for (i, o) in self.objects.into_iter().enumerate() {
            let expanded = o.into_objects(i, base)?;
            origin.extend(std::iter::repeat_n(i, expanded.len()));
            objects.extend(expanded);
        }
        let mut scene = Scene {
            name: self.scene.name,
            duration: self.scene.duration,
            frame_interval: self.scene.frame_interval,
            gravity: DVec3::from_array(self.scene.gravity),
            objects,
            integrator,
            contact,
            sync,
            implicit,
            speed: self.speed.settings(),
            rigid,
            ..defaults
        };
        for (i, f) in self.fixed.iter().enumerate() {
            let set = select(&scene, &f.object, &f.select, &format!("fixed[{i}]"))?;
            scene.fixed.push(set);
        }
        for (i, s) in self.scripts.iter().enumerate() {
            let set = select(&scene, &s.object, &s.select, &format!("script[{i}]"))?;
            let keys = s
                .keys
                .iter()
                .map(|k| (k.time, DVec3::from_array(k.velocity)))
                .collect();
            scene.scripts.push(ScriptSpec { set, keys });
        }
        for (i, f) in self.forces.iter().enumerate() {
            let set = select(&scene, &f.object, &f.select, &format!("force[{i}]"))?;
            scene.forces.push(ForceSpec {
                set,
                force: DVec3::from_array(f.force),
                start: f.start,
                end: f.end,
            });
        }
        Ok((scene, origin, body_origin))
    }
}

impl ObjectTable {
    /// The object, or its copies `name.k` when it has a `replicate` table: copy
    /// `k = (iz * ny + iy) * nx + ix` is moved by `(ix, iy, iz) * spacing` and gets the object's
    /// velocity plus a random one, each component uniform in `[-speed, speed)` from `seed`.
    fn into_objects(self, index: usize, base: &Path) -> Result<Vec<SceneObject>, SceneError> {
        let path = format!("object[{index}].replicate");
        let Some(r) = self.replicate.as_ref() else {
            return Ok(vec![self.into_object(index, base)?]);
        };
        let [nx, ny, _] = r.count;
        let total = replicate_total(r.count, &format!("{path}.count"))?;
        let spacing = DVec3::from_array(r.spacing);
        if !spacing.is_finite() {
            return Err(SceneError::new(
                format!("{path}.spacing"),
                format!("must be finite, got {spacing}"),
            ));
        }
        if !(r.speed.is_finite() && r.speed >= 0.0) {
            return Err(SceneError::new(
                format!("{path}.speed"),
                format!("must be finite and >= 0, got {}", r.speed),
            ));
        }
        let (speed, seed) = (r.speed, r.seed);
        let original = self.into_object(index, base)?;
        let mut copies = Vec::with_capacity(total);
        for k in 0..total {
            let cell = DVec3::new(
                (k % nx) as f64,
                ((k / nx) % ny) as f64,
                (k / (nx * ny)) as f64,
            );
            let offset = cell * spacing;
            let random = DVec3::from_array(std::array::from_fn(|c| {
                speed * (2.0 * mesh::seeded_unit(seed, (3 * k + c) as u64) - 1.0)
            }));
            let mut copy = original.clone();
            copy.name = format!("{}.{k}", original.name);
            copy.mesh.positions.iter_mut().for_each(|p| *p += offset);
            copy.velocity += random;
            copies.push(copy);
        }
        Ok(copies)
    }

    fn into_object(self, index: usize, base: &Path) -> Result<SceneObject, SceneError> {
        let path = format!("object[{index}]");
        let mesh = self
            .mesh
            .build(base)
            .map_err(|e| SceneError::new(format!("{path}.mesh"), e.to_string()))?;
        let scale = match self.scale {
            None => DVec3::ONE,
            Some(ScaleSpec::Uniform(s)) => DVec3::splat(s),
            Some(ScaleSpec::PerAxis(s)) => DVec3::from_array(s),
        };
        if !(scale.is_finite() && scale.min_element() > 0.0) {
            return Err(SceneError::new(
                format!("{path}.scale"),
                format!("must be finite and > 0, got {scale}"),
            ));
        }
        let [rx, ry, rz] = self.rotate.map(f64::to_radians);
        let rotation = DQuat::from_euler(EulerRot::ZYX, rz, ry, rx);
        let mesh = mesh.transformed(scale, rotation, DVec3::from_array(self.translate));
        let particle_mass = match self.mesh {
            MeshSpec::Particle { mass } => Some(mass),
            _ => None,
        };
        let material = match self.material {
            Some(m) => Material {
                density: m.density,
                stretch: m.stretch,
                stretch_damping: m.stretch_damping,
                bend: m.bend,
                bend_damping: m.bend_damping,
                drag: m.drag,
            },
            None if self.fixed || particle_mass.is_some() => Material::INERT,
            None => {
                return Err(SceneError::new(
                    path,
                    "missing [object.material]: only fixed objects and particles may omit it",
                ))
            }
        };
        Ok(SceneObject {
            name: self.name,
            mesh,
            material,
            fixed: self.fixed,
            velocity: DVec3::from_array(self.velocity),
            particle_mass,
        })
    }
}

impl MeshSpec {
    fn build(&self, base: &Path) -> Result<TriMesh, mesh::MeshError> {
        let v = DVec3::from_array;
        match self {
            Self::Sheet {
                nx,
                ny,
                width,
                depth,
            } => mesh::sheet(*nx, *ny, *width, *depth),
            Self::Ribbon {
                points,
                width,
                along,
                across,
                twist,
            } => {
                let points: Vec<DVec3> = points.iter().map(|&p| v(p)).collect();
                mesh::ribbon(&points, *width, *along, *across, *twist)
            }
            Self::Icosphere {
                radius,
                subdivisions,
            } => mesh::icosphere(*radius, *subdivisions),
            Self::Box { size, cells } => mesh::open_box(v(*size), *cells),
            Self::Cylinder {
                radius,
                height,
                segments,
                rings,
                capped,
            } => mesh::cylinder(*radius, *height, *segments, *rings, *capped),
            Self::Nails {
                rows,
                cols,
                spacing,
                height,
                base: nail_base,
            } => mesh::bed_of_nails(*rows, *cols, *spacing, *height, *nail_base),
            Self::LumpySphere {
                radius,
                cells,
                noise,
                seed,
            } => mesh::lumpy_sphere(*radius, *cells, *noise, *seed),
            Self::Obj { path } => {
                let full: PathBuf = base.join(path);
                mesh::read_obj(&full)
            }
            Self::Particle { .. } => Ok(TriMesh::new(vec![DVec3::ZERO], Vec::new())),
        }
    }
}

/// Resolves a selection on the object called `object`.
fn select(
    scene: &Scene,
    object: &str,
    sel: &Selection,
    path: &str,
) -> Result<VertexSet, SceneError> {
    let index = scene.object_index(object).ok_or_else(|| {
        let names: Vec<&str> = scene.objects.iter().map(|o| o.name.as_str()).collect();
        SceneError::new(
            format!("{path}.object"),
            format!("no object called {object:?} (objects: {names:?})"),
        )
    })?;
    let positions = &scene.objects[index].mesh.positions;
    let chosen = [
        sel.vertices.is_some(),
        sel.region.is_some(),
        sel.all.is_some(),
    ];
    if chosen.iter().filter(|&&c| c).count() != 1 {
        return Err(SceneError::new(
            format!("{path}.select"),
            "give exactly one of `vertices = [...]`, `box = { min = [...], max = [...] }`, `all = true`",
        ));
    }
    let mut vertices: Vec<u32> = if let Some(list) = &sel.vertices {
        list.clone()
    } else if let Some(b) = &sel.region {
        let (lo, hi) = (DVec3::from_array(b.min), DVec3::from_array(b.max));
        (0..positions.len() as u32)
            .filter(|&i| {
                let p = positions[i as usize];
                p.cmpge(lo).all() && p.cmple(hi).all()
            })
            .collect()
    } else if sel.all == Some(true) {
        (0..positions.len() as u32).collect()
    } else {
        Vec::new()
    };
    vertices.sort_unstable();
    vertices.dedup();
    if vertices.is_empty() {
        return Err(SceneError::new(
            format!("{path}.select"),
            format!("selects no vertex of object {object:?}"),
        ));
    }
    Ok(VertexSet {
        object: index,
        vertices,
    })
}
