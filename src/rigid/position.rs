//! The position update (thesis §6.1, Table 6.1): move every body as close as possible to its
//! target pose without overlap, by iterated QPs over linearized separating-plane constraints.
//!
//! Each QP has, per movable body of a group, the perturbation `(dx, dphi)`, and per close pair
//! a perturbation `(delta_x, delta_y)` of the plane normal along its tangent frame and the
//! plane's offset `e` from a point `p0` on it (the thesis's `d`, measured from near the pair
//! for conditioning). A critical vertex `q` of `A` must stay on its side:
//! `n.(q - p0) + n.dx_a - (n x (q - x_a)).dphi_a + (n_x.(q - p0)) delta_x + (n_y.(q - p0))
//! delta_y - e <= -gap/2 - r_a` (eq. 6.18; a sphere's centre with its radius `r_a`), and
//! symmetrically for `B` (eq. 6.19). Rotation and normal perturbations are bounded per
//! iteration (§6.1.6); joints are equalities (eq. 6.44). The objective is eq. 6.7 or 6.8.
//! After each QP the bodies are moved exactly (rotation by the quaternion of `dphi`), the
//! planes are recomputed from the geometry, and vertices found on or beyond their plane are
//! added as critical ("reckless dynamic update"). An infeasible QP rolls the group back one
//! iterate. The update ends when nothing was added and nothing moved; the frame's poses are
//! the last iterate at which every pair is at least `gap / 10` apart, verified by the broad
//! phase and the signed distance of every pair (the start of the step when none is).

use glam::DVec3;
use hashbrown::HashMap;

use super::body::{rotation_between, Body, Pose};
use super::geometry::{separation, tangent_frame, Separation, WorldPart};
use super::qp::{Qp, QpFailure};
use super::scene::{ObaSettings, Objective};
use super::World;

/// Critical vertices of a pair's two parts (indices into each part's vertices).
type Critical = (Vec<u32>, Vec<u32>);

/// A close pair of parts and what the position update learnt about it.
#[derive(Clone, Debug)]
pub struct ClosePair {
    /// The two parts (flat indices into [`World::parts`]), smaller first.
    pub parts: (usize, usize),
    /// Their separation at the final poses.
    pub separation: Separation,
    /// Critical vertices of each part (indices into the part's vertices).
    pub critical: (Vec<u32>, Vec<u32>),
}

/// What one position update did.
#[derive(Clone, Debug, Default)]
pub struct PositionOutcome {
    /// The close pairs, with their separations at the final poses.
    pub pairs: Vec<ClosePair>,
    /// QPs solved.
    pub qps: u32,
    /// Rollbacks after infeasible QPs.
    pub rollbacks: u32,
    /// Iterations.
    pub iterations: u32,
    /// Whether the iterations ended without a clean configuration and an earlier clean one
    /// was taken.
    pub fallback: bool,
    /// The smallest separation of a close pair at the final poses (cm).
    pub min_separation: f64,
}

/// The step's poses could not be made overlap-free.
#[derive(Clone, Debug, thiserror::Error)]
#[error(
    "bodies {a:?} and {b:?} overlap by {depth:.3e} cm at every configuration the position update \
     reached, the start of the step included: prescribed motion (a scripted body) pushes one \
     into the other"
)]
pub struct Stuck {
    /// One body.
    pub a: String,
    /// The other.
    pub b: String,
    /// Overlap (cm).
    pub depth: f64,
}

/// Runs the position update: `bodies[i].pose` is the start, `targets[i]` the target;
/// immovable bodies (`movable[i] == false`) are at their targets already. On success the
/// bodies' poses are the new ones.
pub fn update(
    world: &World,
    bodies: &mut [Body],
    targets: &[Pose],
    movable: &[bool],
) -> Result<PositionOutcome, Stuck> {
    let s = &world.settings;
    let n = bodies.len();
    let mut cur: Vec<Pose> = (0..n)
        .map(|i| {
            if movable[i] {
                bodies[i].pose
            } else {
                targets[i]
            }
        })
        .collect();
    let deficit = |i: usize, cur: &[Pose]| -> f64 {
        if !movable[i] {
            return 0.0;
        }
        let (c, t) = (cur[i], targets[i]);
        (t.position - c.position).length()
            + rotation_between(c.orientation, t.orientation).length() * bodies[i].reach
    };
    let mut outcome = PositionOutcome::default();
    let mut pairs: HashMap<(usize, usize), Critical> = HashMap::new();
    // The swept boxes of the whole step find the pairs that could meet in it.
    let start_parts = world.pose_parts(bodies, &cur);
    let target_parts = world.pose_parts(bodies, targets);
    let swept: Vec<(DVec3, DVec3)> = start_parts
        .iter()
        .zip(&target_parts)
        .map(|(a, b)| {
            let ((lo_a, hi_a), (lo_b, hi_b)) = (a.bounds(), b.bounds());
            (
                lo_a.min(lo_b) - s.contact_distance,
                hi_a.max(hi_b) + s.contact_distance,
            )
        })
        .collect();
    let mut last_clean = cur.clone();
    let mut history: Vec<Vec<Pose>> = vec![cur.clone()];
    let candidates = world.candidates(&swept, movable);
    for &(p, q) in &candidates {
        let (a, b) = (world.parts[p].0, world.parts[q].0);
        let sep = separation(&start_parts[p], &start_parts[q]);
        if sep.distance < s.contact_distance + deficit(a, &cur) + deficit(b, &cur) {
            pairs.insert((p, q), (Vec::new(), Vec::new()));
        }
    }
    let mut moved = f64::INFINITY;
    let mut stuck_groups: Vec<bool> = vec![false; n];
    loop {
        let parts = world.pose_parts(bodies, &cur);
        let mut added = false;
        if outcome.iterations > 0 {
            // Pairs the last move brought close (reckless update).
            let boxes: Vec<_> = parts
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    let (lo, hi) = p.bounds();
                    let grow = s.contact_distance + deficit(world.parts[k].0, &cur);
                    (lo - grow, hi + grow)
                })
                .collect();
            for (p, q) in world.candidates(&boxes, movable) {
                if pairs.contains_key(&(p, q)) {
                    continue;
                }
                let (a, b) = (world.parts[p].0, world.parts[q].0);
                let sep = separation(&parts[p], &parts[q]);
                if sep.distance < s.contact_distance + deficit(a, &cur) + deficit(b, &cur) {
                    pairs.insert((p, q), (Vec::new(), Vec::new()));
                    added = true;
                }
            }
        }
        // Planes and critical vertices at the current poses.
        let mut keys: Vec<(usize, usize)> = pairs.keys().copied().collect();
        keys.sort_unstable();
        let mut planes = Vec::with_capacity(keys.len());
        let mut clean = true;
        for &(p, q) in &keys {
            let (pa, pb) = (&parts[p], &parts[q]);
            let sep = separation(pa, pb);
            if sep.distance < 0.1 * s.gap {
                clean = false;
            }
            let (a, b) = (world.parts[p].0, world.parts[q].0);
            let reach = s.contact_distance + deficit(a, &cur) + deficit(b, &cur);
            // The plane's reference point near the smaller body, where the contact is.
            let near = if bodies[a].reach < bodies[b].reach {
                a
            } else {
                b
            };
            let plane = Plane::new(pa, sep, cur[near].position);
            let entry = pairs.get_mut(&(p, q)).expect("listed");
            added |= critical(&mut entry.0, pa, &plane, 1.0, reach);
            added |= critical(&mut entry.1, pb, &plane, -1.0, reach);
            planes.push(plane);
        }
        if clean && verified(world, bodies, &cur, movable, s.gap) {
            last_clean = cur.clone();
            outcome.min_separation = keys
                .iter()
                .map(|&(p, q)| separation(&parts[p], &parts[q]).distance)
                .fold(f64::INFINITY, f64::min);
            if !added && moved < s.gap {
                break;
            }
        }
        if !clean && added && cur != last_clean && outcome.iterations < s.max_iterations {
            // The last move ran into pairs it did not know: go back to the last clean poses,
            // where every plane separates, and solve again knowing them (Table 6.1's rollback,
            // which keeps the close pairs and critical vertices found).
            cur = last_clean.clone();
            outcome.rollbacks += 1;
            outcome.iterations += 1;
            moved = f64::INFINITY;
            continue;
        }
        if outcome.iterations >= s.max_iterations {
            if !clean || !verified(world, bodies, &cur, movable, s.gap) {
                outcome.fallback = true;
            }
            break;
        }
        outcome.iterations += 1;
        // Groups of movable bodies joined by pairs and joints.
        let mut groups = UnionFind::new(n);
        for &(p, q) in &keys {
            let (a, b) = (world.parts[p].0, world.parts[q].0);
            if movable[a] && movable[b] {
                groups.union(a, b);
            }
        }
        for j in &world.joints {
            if movable[j.bodies[0]] && movable[j.bodies[1]] {
                groups.union(j.bodies[0], j.bodies[1]);
            }
        }
        let mut constrained = vec![false; n];
        for &(p, q) in &keys {
            constrained[world.parts[p].0] = true;
            constrained[world.parts[q].0] = true;
        }
        for j in &world.joints {
            constrained[j.bodies[0]] = true;
            constrained[j.bodies[1]] = true;
        }
        let mut members: HashMap<usize, Vec<usize>> = HashMap::new();
        for i in 0..n {
            if !movable[i] || stuck_groups[i] {
                continue;
            }
            if !constrained[i] {
                moved = moved.max(deficit(i, &cur));
                cur[i] = targets[i];
                continue;
            }
            members.entry(groups.find(i)).or_default().push(i);
        }
        let mut roots: Vec<usize> = members.keys().copied().collect();
        roots.sort_unstable();
        moved = 0.0;
        let previous = cur.clone();
        for root in roots {
            let group = &members[&root];
            let qp = GroupQp::build(
                world, bodies, &cur, targets, movable, group, &keys, &planes, &pairs, &parts,
            );
            outcome.qps += 1;
            match qp.qp.solve() {
                Ok(x) => {
                    for (k, &i) in group.iter().enumerate() {
                        let dx = DVec3::new(x[6 * k], x[6 * k + 1], x[6 * k + 2]);
                        let dphi = DVec3::new(x[6 * k + 3], x[6 * k + 4], x[6 * k + 5]);
                        moved = moved.max(dx.length() + dphi.length() * bodies[i].reach);
                        cur[i] = cur[i].perturbed(dx, dphi);
                    }
                }
                Err(QpFailure::Infeasible | QpFailure::Unsolved(_)) => {
                    outcome.rollbacks += 1;
                    // Back one iterate; at the start the group stays there for this step.
                    let back = history.len().saturating_sub(2);
                    for &i in group {
                        cur[i] = history[back][i];
                        if back == 0 {
                            stuck_groups[i] = true;
                        }
                    }
                    if history.len() > 1 {
                        history.pop();
                    }
                }
            }
        }
        if cur != previous {
            history.push(cur.clone());
        }
    }
    if outcome.fallback || cur != last_clean && !verified(world, bodies, &cur, movable, s.gap) {
        outcome.fallback = true;
        cur = last_clean;
    }
    // The start of the step with prescribed bodies moved may itself overlap.
    if !verified(world, bodies, &cur, movable, s.gap) {
        let parts = world.pose_parts(bodies, &cur);
        let (p, q, d) = worst_pair(world, &parts, movable);
        return Err(Stuck {
            a: bodies[world.parts[p].0].name.clone(),
            b: bodies[world.parts[q].0].name.clone(),
            depth: -d,
        });
    }
    let parts = world.pose_parts(bodies, &cur);
    let mut keys: Vec<_> = pairs.into_iter().collect();
    keys.sort_unstable_by_key(|(k, _)| *k);
    outcome.pairs = keys
        .into_iter()
        .map(|((p, q), critical)| ClosePair {
            parts: (p, q),
            separation: separation(&parts[p], &parts[q]),
            critical,
        })
        .collect();
    if outcome.pairs.is_empty() {
        outcome.min_separation = f64::INFINITY;
    } else {
        outcome.min_separation = outcome
            .pairs
            .iter()
            .map(|p| p.separation.distance)
            .fold(f64::INFINITY, f64::min);
    }
    for (b, pose) in bodies.iter_mut().zip(cur) {
        b.pose = pose;
    }
    Ok(outcome)
}

/// Whether every pair of parts whose boxes touch, one of them movable, is at least
/// `gap / 10` apart at `poses`.
fn verified(world: &World, bodies: &[Body], poses: &[Pose], movable: &[bool], gap: f64) -> bool {
    let parts = world.pose_parts(bodies, poses);
    worst_pair(world, &parts, movable).2 >= 0.1 * gap
}

/// The closest pair of parts (one movable) whose boxes overlap, and its separation
/// (`(0, 0, inf)` when there is none).
fn worst_pair(world: &World, parts: &[WorldPart], movable: &[bool]) -> (usize, usize, f64) {
    let boxes: Vec<_> = parts.iter().map(WorldPart::bounds).collect();
    world
        .candidates(&boxes, movable)
        .into_iter()
        .map(|(p, q)| (p, q, separation(&parts[p], &parts[q]).distance))
        .fold((0, 0, f64::INFINITY), |w, c| if c.2 < w.2 { c } else { w })
}

/// A pair's separating plane at the current poses: normal, tangent frame, a point on the
/// mid-plane (eq. 6.20) near the pair.
struct Plane {
    n: DVec3,
    nx: DVec3,
    ny: DVec3,
    p0: DVec3,
}

impl Plane {
    fn new(a: &WorldPart, sep: Separation, near: DVec3) -> Self {
        let n = sep.normal;
        let max_a = a
            .vertices
            .iter()
            .map(|v| v.dot(n))
            .fold(f64::NEG_INFINITY, f64::max)
            + a.radius;
        let mid = max_a + 0.5 * sep.distance;
        let (nx, ny) = tangent_frame(n);
        Self {
            n,
            nx,
            ny,
            p0: near + (mid - near.dot(n)) * n,
        }
    }
}

/// Adds to `set` the vertices of `part` (on side `side`: +1 for `A`, -1 for `B`) within
/// `reach` of the plane or beyond it; whether any was added.
fn critical(set: &mut Vec<u32>, part: &WorldPart, plane: &Plane, side: f64, reach: f64) -> bool {
    let before = set.len();
    for (k, v) in part.vertices.iter().enumerate() {
        let height = side * plane.n.dot(*v - plane.p0) + part.radius;
        if height > -reach && !set.contains(&(k as u32)) {
            set.push(k as u32);
        }
    }
    set.len() > before
}

/// The QP of one group: variables `6 k..6 k + 6` the perturbation of the group's `k`-th body,
/// then three per pair touching the group.
struct GroupQp {
    qp: Qp,
}

impl GroupQp {
    #[allow(clippy::too_many_arguments)]
    fn build(
        world: &World,
        bodies: &[Body],
        cur: &[Pose],
        targets: &[Pose],
        movable: &[bool],
        group: &[usize],
        keys: &[(usize, usize)],
        planes: &[Plane],
        pairs: &HashMap<(usize, usize), Critical>,
        parts: &[WorldPart],
    ) -> Self {
        let s: &ObaSettings = &world.settings;
        let slot: HashMap<usize, usize> = group.iter().enumerate().map(|(k, &i)| (i, k)).collect();
        let in_group = |i: usize| slot.get(&i).copied();
        let pair_list: Vec<usize> = (0..keys.len())
            .filter(|&k| {
                let (a, b) = (world.parts[keys[k].0].0, world.parts[keys[k].1].0);
                in_group(a).is_some() || in_group(b).is_some()
            })
            .collect();
        let mut qp = Qp::new(6 * group.len() + 3 * pair_list.len());
        for (k, &i) in group.iter().enumerate() {
            let (c, t) = (cur[i], targets[i]);
            let dx_target = t.position - c.position;
            let dphi_target = rotation_between(c.orientation, t.orientation);
            let body = &bodies[i];
            let (wx, wphi) = match s.objective {
                Objective::Mass => (glam::DMat3::from_diagonal(DVec3::splat(2.0 * body.mass)), {
                    let r = c.rotation;
                    2.0 * (r * body.inertia * r.transpose())
                }),
                Objective::Diameter => (
                    glam::DMat3::from_diagonal(DVec3::splat(2.0)),
                    glam::DMat3::from_diagonal(DVec3::splat(2.0 * body.diameter.powi(2))),
                ),
            };
            qp.add_weighted_distance(6 * k, wx, dx_target);
            qp.add_weighted_distance(6 * k + 3, wphi, dphi_target);
            for axis in 0..3 {
                qp.at_most(vec![(6 * k + 3 + axis, 1.0)], s.rotation_bound);
                qp.at_least(vec![(6 * k + 3 + axis, 1.0)], -s.rotation_bound);
            }
        }
        let base = 6 * group.len();
        for (slot_k, &k) in pair_list.iter().enumerate() {
            let (p, q) = keys[k];
            let plane = &planes[k];
            let (dx_var, dy_var, e_var) = (
                base + 3 * slot_k,
                base + 3 * slot_k + 1,
                base + 3 * slot_k + 2,
            );
            let critical = &pairs[&(p, q)];
            // The linearized normal n + delta has length 1 + |delta|^2 / 2: at a vertex `L`
            // from p0 the tilted plane is off by |delta|^2 L / 2, so the tilt per iteration is
            // bounded to keep that within the gap.
            let lever = [(p, &critical.0), (q, &critical.1)]
                .iter()
                .flat_map(|(part, set)| set.iter().map(move |&k| (*part, k)))
                .map(|(part, k)| parts[part].vertices[k as usize].distance(plane.p0))
                .fold(0.0f64, f64::max);
            let tilt = s.rotation_bound.min((s.gap / lever.max(1e-300)).sqrt());
            for v in [dx_var, dy_var] {
                qp.at_most(vec![(v, 1.0)], tilt);
                qp.at_least(vec![(v, 1.0)], -tilt);
            }
            for (part, set, side) in [(p, &critical.0, 1.0), (q, &critical.1, -1.0)] {
                let body = world.parts[part].0;
                let wp = &parts[part];
                for &vk in set {
                    let v = wp.vertices[vk as usize];
                    let rel = v - plane.p0;
                    let mut terms = vec![
                        (dx_var, plane.nx.dot(rel)),
                        (dy_var, plane.ny.dot(rel)),
                        (e_var, -1.0),
                    ];
                    if let Some(b) = in_group(body).filter(|_| movable[body]) {
                        let lever = v - cur[body].position;
                        let rot = -plane.n.cross(lever);
                        for axis in 0..3 {
                            terms.push((6 * b + axis, plane.n[axis]));
                            terms.push((6 * b + 3 + axis, rot[axis]));
                        }
                    }
                    let offset = 0.5 * s.gap + wp.radius;
                    if side > 0.0 {
                        qp.at_most(terms, -offset - plane.n.dot(rel));
                    } else {
                        qp.at_least(terms, offset - plane.n.dot(rel));
                    }
                }
            }
        }
        for j in &world.joints {
            let [a, b] = j.bodies;
            if in_group(a).is_none() && in_group(b).is_none() {
                continue;
            }
            let qa = cur[a].apply(j.anchors[0]);
            let qb = cur[b].apply(j.anchors[1]);
            // qa + dx_a + dphi_a x ra = qb + dx_b + dphi_b x rb.
            for axis in 0..3 {
                let mut terms = Vec::new();
                for (body, q, sign) in [(a, qa, 1.0), (b, qb, -1.0)] {
                    if let Some(k) = in_group(body).filter(|_| movable[body]) {
                        let lever = q - cur[body].position;
                        terms.push((6 * k + axis, sign));
                        for i in 0..3 {
                            let mut e = DVec3::ZERO;
                            e[i] = 1.0;
                            terms.push((6 * k + 3 + i, sign * e.cross(lever)[axis]));
                        }
                    }
                }
                qp.equal(terms, qb[axis] - qa[axis]);
            }
        }
        Self { qp }
    }
}

/// Disjoint sets over `0..n` (path halving, union by index: the root is the smallest member's
/// representative found first, deterministic).
#[derive(Debug)]
pub struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    /// `n` singletons.
    pub fn new(n: usize) -> Self {
        Self {
            parent: (0..n).collect(),
        }
    }

    /// The representative of `i`'s set.
    pub fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    /// Joins the sets of `a` and `b` (the smaller representative becomes the root).
    pub fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = (ra.min(rb), ra.max(rb));
            self.parent[hi] = lo;
        }
    }
}
