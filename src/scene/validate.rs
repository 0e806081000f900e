//! Validation of a [`Scene`]: every number finite and in range, every index in bounds.

use glam::DVec3;
use hashbrown::HashSet;

use super::description::Scene;
use super::error::SceneError;
use super::objects::VertexSet;
use super::speed_limit::INSTANTS_PER_LAYER;

/// Upper bound on frames, so a typo in `frame_interval` cannot fill the disk.
const MAX_FRAMES: u64 = Scene::MAX_FRAMES;

type Result<T = ()> = std::result::Result<T, SceneError>;

pub(super) fn scene(s: &Scene) -> Result {
    positive(&s.duration, "scene.duration")?;
    positive(&s.frame_interval, "scene.frame_interval")?;
    if s.frame_count() > MAX_FRAMES {
        return Err(SceneError::new(
            "scene.frame_interval",
            format!(
                "{} frames over {} s is more than {MAX_FRAMES}; use a larger frame interval",
                s.frame_count(),
                s.duration
            ),
        ));
    }
    finite_vec(s.gravity, "scene.gravity")?;
    let ql = s.speed.quality_loss;
    if !(0.0..1.0).contains(&ql) {
        return Err(SceneError::new(
            "speed.quality_loss",
            format!("must lie in [0, 1) (1 would never let time advance), got {ql}"),
        ));
    }
    objects(s)?;
    s.rigid.validate()?;
    for (i, set) in s.fixed.iter().enumerate() {
        vertex_set(s, set, &format!("fixed[{i}]"))?;
    }
    scripts(s)?;
    for (i, f) in s.forces.iter().enumerate() {
        let path = format!("force[{i}]");
        vertex_set(s, &f.set, &path)?;
        finite_vec(f.force, &format!("{path}.force"))?;
        non_negative(&f.start, &format!("{path}.start"))?;
        if f.end.is_nan() || f.end <= f.start {
            return Err(SceneError::new(
                format!("{path}.end"),
                format!("must be later than start ({}), got {}", f.start, f.end),
            ));
        }
    }
    let integ = &s.integrator;
    positive(&integ.safety, "integrator.safety")?;
    if integ.safety > 1.0 {
        return Err(SceneError::new(
            "integrator.safety",
            format!(
                "must be in (0, 1], got {}: above 1 the stable clocks are not stable",
                integ.safety
            ),
        ));
    }
    if let Some(clock) = &integ.clock {
        positive(clock, "integrator.clock")?;
    }
    sync(&s.sync)?;
    implicit(&s.implicit)?;
    let c = &s.contact;
    positive(&c.eta1, "contact.eta1")?;
    positive(&c.r1, "contact.r1")?;
    non_negative(&c.friction, "contact.friction")?;
    if !(0.0..=1.0).contains(&c.cor) {
        return Err(SceneError::new(
            "contact.cor",
            format!(
                "coefficient of restitution must be in [0, 1], got {}",
                c.cor
            ),
        ));
    }
    if c.scheduler == super::ContactScheduler::Speculative && s.speed.triangle_pairs {
        return Err(SceneError::new(
            "contact.scheduler",
            "the speculative scheduler checks vertex-triangle and edge-edge pairs, not triangle \
             pairs: set speed.triangle_pairs = false, or contact.scheduler = \"kds\"",
        ));
    }
    if c.enabled {
        c.schedule()?;
        resolvable_thickness(s)?;
        thickness_within_scene(s)?;
        if s.integrator.method == super::Method::Acm {
            resolvable_speeds(s)?;
        }
    }
    positive(&c.safety, "contact.safety")?;
    if c.safety > 1.0 {
        return Err(SceneError::new(
            "contact.safety",
            format!("must be in (0, 1], got {}", c.safety),
        ));
    }
    Ok(())
}

/// The guarantee holds from an intersection-free start: the exact audit of `acm check` over
/// every pair of triangles that share no vertex, across and within objects (when the scene
/// handles contact).
pub(super) fn intersection_free(s: &Scene) -> Result {
    if !s.handles_contact() {
        return Ok(());
    }
    let mut positions = Vec::with_capacity(s.vertex_count());
    let mut triangles = Vec::with_capacity(s.triangle_count());
    // Per object, its first global triangle.
    let mut first_triangle = Vec::with_capacity(s.objects.len());
    for o in &s.objects {
        let offset = positions.len() as u32;
        first_triangle.push(triangles.len());
        positions.extend_from_slice(&o.mesh.positions);
        triangles.extend(o.mesh.triangles.iter().map(|t| t.map(|v| v + offset)));
    }
    let report = crate::check::audit_frame(&positions, &triangles, 0.0, 0)
        .map_err(|e| SceneError::new("object", e.to_string()))?;
    let Some(bad) = report.first_bad else {
        return Ok(());
    };
    let locate = |t: u32| {
        let o = first_triangle.partition_point(|&first| first <= t as usize) - 1;
        let local = t as usize - first_triangle[o];
        (o, local, s.objects[o].mesh.triangles[local])
    };
    let ((oa, ta, va), (ob, tb, vb)) = (locate(bad.triangles[0]), locate(bad.triangles[1]));
    let (na, nb) = (&s.objects[oa].name, &s.objects[ob].name);
    let within = if oa == ob {
        format!("object {na:?} crosses itself")
    } else {
        format!("objects {na:?} and {nb:?} intersect")
    };
    Err(SceneError::new(
        format!("object[{oa}].mesh"),
        format!(
            "{within} at the start: triangle {ta} of {na:?} (vertices {va:?}) and triangle {tb} \
             of {nb:?} (vertices {vb:?}) intersect ({} intersecting pairs in all). Contact can \
             keep surfaces apart only from an intersection-free start: move the objects apart \
             or fix the mesh",
            report.intersecting_pairs
        ),
    ))
}

/// `contact.eta1` may be no thinner than this many ulps of the scene's largest coordinate: a
/// layer must be far wider than the rounding of the positions it separates.
const ULPS_PER_LAYER: f64 = 1024.0;

/// `contact.eta1` wide enough to resolve at the scene's coordinates.
fn resolvable_thickness(s: &Scene) -> Result {
    let largest = s
        .objects
        .iter()
        .flat_map(|o| o.mesh.positions.iter())
        .map(|p| p.abs().max_element())
        .fold(1.0, f64::max);
    let thinnest = ULPS_PER_LAYER * f64::EPSILON * largest;
    if s.contact.eta1 >= thinnest {
        return Ok(());
    }
    Err(SceneError::new(
        "contact.eta1",
        format!(
            "{:e} cm is too thin to resolve at coordinates up to {largest:e} cm in double \
             precision; use at least {thinnest:.3e} cm",
            s.contact.eta1
        ),
    ))
}

/// `contact.eta1` narrower than the scene. As wide as the scene, every pair of primitives
/// starts inside the first layer: the start is refused (its pairs must be `eta1` apart), and
/// here before the broad phase lists every pair of the scene, which takes time quadratic in
/// its size.
fn thickness_within_scene(s: &Scene) -> Result {
    let positions = s.objects.iter().flat_map(|o| o.mesh.positions.iter());
    let (lo, hi) = positions.fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(lo, hi), p| {
        (lo.min(*p), hi.max(*p))
    });
    let across = (hi - lo).length();
    if across.is_nan() || across <= 0.0 || s.contact.eta1 < across {
        return Ok(());
    }
    Err(SceneError::new(
        "contact.eta1",
        format!(
            "{} cm is as wide as the whole scene, whose objects span {across:.3e} cm at the \
             start: every pair of primitives would start inside the first layer. Use a \
             thickness well below the gaps between the objects",
            s.contact.eta1
        ),
    ))
}

/// Every start velocity and scripted velocity within what contact can resolve
/// ([`SpeedLimit`](super::SpeedLimit)).
fn resolvable_speeds(s: &Scene) -> Result {
    let limit = s.resolvable_speed();
    let too_fast = |v: DVec3, path: String| {
        if v.length() <= limit {
            return Ok(());
        }
        Err(SceneError::new(
            path,
            format!(
                "{:e} cm/s is faster than contact can resolve in this scene: the kinetic broad \
                 phase resolves time to {:e} (1 + t) s and a vertex must take at least \
                 {INSTANTS_PER_LAYER} such instants to cross contact.eta1 = {} cm, so speeds up \
                 to {limit:.3e} cm/s work here (a larger eta1 or a shorter scene allows more)",
                v.length(),
                crate::kds::kdop::INSTANT,
                s.contact.eta1
            ),
        ))
    };
    for (i, o) in s.objects.iter().enumerate() {
        too_fast(o.velocity, format!("object[{i}].velocity"))?;
    }
    for (i, script) in s.scripts.iter().enumerate() {
        for (k, (_, v)) in script.keys.iter().enumerate() {
            too_fast(*v, format!("script[{i}].keys[{k}].velocity"))?;
        }
    }
    Ok(())
}

fn sync(s: &super::SyncSettings) -> Result {
    for (value, path) in [
        (s.step, "sync.step"),
        (s.thickness, "sync.thickness"),
        (s.stiffness, "sync.stiffness"),
    ] {
        if let Some(x) = &value {
            positive(x, path)?;
        }
    }
    if let Some(mu) = &s.friction {
        non_negative(mu, "sync.friction")?;
    }
    if s.max_failsafe_iterations == 0 {
        return Err(SceneError::new(
            "sync.max_failsafe_iterations",
            "must be at least 1: the fail-safe is what makes a step collision-free",
        ));
    }
    Ok(())
}

fn implicit(s: &super::ImplicitSettings) -> Result {
    for (value, path) in [(s.step, "implicit.step"), (s.delta, "implicit.delta")] {
        if let Some(x) = &value {
            positive(x, path)?;
        }
    }
    if let Some(mu) = &s.friction {
        non_negative(mu, "implicit.friction")?;
    }
    for (n, path) in [
        (s.max_cmr_iterations, "implicit.max_cmr_iterations"),
        (s.max_ica_iterations, "implicit.max_ica_iterations"),
        (s.max_pgs_sweeps, "implicit.max_pgs_sweeps"),
    ] {
        if n == 0 {
            return Err(SceneError::new(path, "must be at least 1"));
        }
    }
    if s.max_halvings > 20 {
        return Err(SceneError::new(
            "implicit.max_halvings",
            format!(
                "must be at most 20 (2^20 sub-steps a step), got {}",
                s.max_halvings
            ),
        ));
    }
    for (x, path) in [
        (s.ica_tolerance, "implicit.ica_tolerance"),
        (s.cg_tolerance, "implicit.cg_tolerance"),
    ] {
        positive(&x, path)?;
        if x >= 1.0 {
            return Err(SceneError::new(path, format!("must be below 1, got {x}")));
        }
    }
    Ok(())
}

fn objects(s: &Scene) -> Result {
    if s.objects.is_empty() && s.rigid.bodies.is_empty() {
        return Err(SceneError::new(
            "object",
            "the scene has no objects or bodies",
        ));
    }
    let vertices = s.vertex_count();
    crate::mesh::budget::check_vertices(vertices as u64).map_err(|e| {
        SceneError::new(
            "object",
            format!("the scene's {vertices} vertices are too many for this machine: {e}"),
        )
    })?;
    let mut names = HashSet::new();
    for (i, o) in s.objects.iter().enumerate() {
        let path = format!("object[{i}]");
        if o.name.is_empty() || o.name.chars().any(char::is_whitespace) {
            return Err(SceneError::new(
                format!("{path}.name"),
                format!("names must be non-empty without spaces, got {:?}", o.name),
            ));
        }
        if !names.insert(o.name.as_str()) {
            return Err(SceneError::new(
                format!("{path}.name"),
                format!("two objects are called {:?}; names must be unique", o.name),
            ));
        }
        if let Some(mass) = &o.particle_mass {
            positive(mass, &format!("{path}.mesh.mass"))?;
            let p = &o.mesh.positions;
            if p.len() != 1 || !o.mesh.triangles.is_empty() || !p[0].is_finite() {
                return Err(SceneError::new(
                    format!("{path}.mesh"),
                    "a particle is one finite vertex and no triangle",
                ));
            }
        } else {
            o.mesh.validate().map_err(|e| SceneError::mesh(i, &e))?;
            if !o.fixed {
                unused_vertex(o, &path)?;
            }
        }
        let m = &o.material;
        positive(&m.density, &format!("{path}.material.density"))?;
        non_negative(&m.stretch, &format!("{path}.material.stretch"))?;
        non_negative(
            &m.stretch_damping,
            &format!("{path}.material.stretch_damping"),
        )?;
        non_negative(&m.bend, &format!("{path}.material.bend"))?;
        non_negative(&m.bend_damping, &format!("{path}.material.bend_damping"))?;
        non_negative(&m.drag, &format!("{path}.material.drag"))?;
        finite_vec(o.velocity, &format!("{path}.velocity"))?;
    }
    Ok(())
}

/// A free vertex in no triangle would have no mass.
fn unused_vertex(o: &super::SceneObject, path: &str) -> Result {
    let mut used = vec![false; o.mesh.positions.len()];
    for t in &o.mesh.triangles {
        for &v in t {
            used[v as usize] = true;
        }
    }
    match used.iter().position(|&u| !u) {
        Some(v) => Err(SceneError::new(
            format!("{path}.mesh"),
            format!(
                "vertex {v} belongs to no triangle, so it has no mass; remove it from the mesh \
                 (or make the object fixed)"
            ),
        )),
        None => Ok(()),
    }
}

fn scripts(s: &Scene) -> Result {
    let pinned: HashSet<(usize, u32)> = s
        .fixed
        .iter()
        .flat_map(|set| set.vertices.iter().map(move |&v| (set.object, v)))
        .collect();
    for (i, script) in s.scripts.iter().enumerate() {
        let path = format!("script[{i}]");
        vertex_set(s, &script.set, &path)?;
        if let Some(&v) = script
            .set
            .vertices
            .iter()
            .find(|&&v| pinned.contains(&(script.set.object, v)))
        {
            return Err(SceneError::new(
                path,
                format!(
                    "vertex {v} of object {:?} is both fixed and scripted; a vertex can have one motion",
                    s.objects[script.set.object].name
                ),
            ));
        }
        if script.keys.is_empty() {
            return Err(SceneError::new(
                format!("{path}.keys"),
                "a script needs at least one key",
            ));
        }
        let mut previous = f64::NEG_INFINITY;
        for (k, (time, velocity)) in script.keys.iter().enumerate() {
            let key = format!("{path}.keys[{k}]");
            non_negative(time, &format!("{key}.time"))?;
            if *time <= previous {
                return Err(SceneError::new(
                    format!("{key}.time"),
                    format!("key times must increase strictly; {time} follows {previous}"),
                ));
            }
            previous = *time;
            finite_vec(*velocity, &format!("{key}.velocity"))?;
        }
    }
    Ok(())
}

fn vertex_set(s: &Scene, set: &VertexSet, path: &str) -> Result {
    let Some(object) = s.objects.get(set.object) else {
        return Err(SceneError::new(
            format!("{path}.object"),
            format!(
                "object index {} out of range ({} objects)",
                set.object,
                s.objects.len()
            ),
        ));
    };
    if set.vertices.is_empty() {
        return Err(SceneError::new(path, "the selection holds no vertex"));
    }
    let n = object.mesh.positions.len();
    if let Some(&v) = set.vertices.iter().find(|&&v| v as usize >= n) {
        return Err(SceneError::new(
            format!("{path}.vertices"),
            format!(
                "vertex {v} out of range: object {:?} has {n} vertices",
                object.name
            ),
        ));
    }
    Ok(())
}

fn finite_vec(v: DVec3, path: &str) -> Result {
    if v.is_finite() {
        Ok(())
    } else {
        Err(SceneError::new(path, format!("must be finite, got {v}")))
    }
}

fn positive(x: &f64, path: &str) -> Result {
    if x.is_finite() && *x > 0.0 {
        Ok(())
    } else {
        Err(SceneError::new(
            path,
            format!("must be a finite number > 0, got {x}"),
        ))
    }
}

fn non_negative(x: &f64, path: &str) -> Result {
    if x.is_finite() && *x >= 0.0 {
        Ok(())
    } else {
        Err(SceneError::new(
            path,
            format!("must be a finite number >= 0, got {x}"),
        ))
    }
}
