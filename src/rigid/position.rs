//! The position update (thesis §6.1, Table 6.1): move every body as close as possible to its
//! target pose without overlap, by iterated QPs over linearized separating-plane constraints.
//!
//! **The problem.** Minimize the distance to the targets (eq. 6.7 or 6.8) over the bodies'
//! poses and, per close pair of parts, a separating plane `n.x = d` (unit `n` from `A` to
//! `B`) with every vertex of `A` on its side by `gap / 2` and every vertex of `B` on the other
//! (eq. 6.1; a sphere is its centre with its radius). The constraints are bilinear in the
//! poses and planes, so each iteration solves the QP of their linearization about the current
//! poses and planes: per movable body of a group the perturbation `(dx, dphi)`, per pair the
//! plane's tilt `(delta_x, delta_y)` along its tangent frame and its offset `e` from a pivot
//! `p0` on it, and per critical vertex `q` of `A` the row
//! `n.(q - p0) + n.dx_a - (n x (q - x_a)).dphi_a + (n_x.(q - p0)) delta_x + (n_y.(q - p0))
//! delta_y - e <= -gap/2 - r_a` (eq. 6.18; eq. 6.19 for `B` with the sign turned). Joints are
//! equalities (eq. 6.44).
//!
//! **Planes are carried.** The thesis recomputes each plane from the geometry after every QP.
//! Where the closest features of a pair change with the poses (a corner passing an edge, a
//! sphere under a tilting face) that normal jumps between iterates, and the iteration cycles:
//! measured on the thesis's `c-s stack` and pendulum, where most steps ran to the iteration
//! limit without settling. Here a pair's plane is taken from the geometry when the pair is
//! found (the mid-plane of eq. 6.20 across the signed-distance normal), and afterwards moved
//! by the QP's own tilt and offset, so the planes change smoothly with the poses and the
//! iteration is Newton-like on one smooth problem.
//!
//! **Slab pairs.** A pair whose parts do not turn with their bodies (spheres about their own
//! centres, parts of immovable bodies) needs no plane: the slab width along its current
//! normal is linear in the translations, so its one row is exact and conservative
//! (`GroupQpBuilder::add_slab_row`), and a step never leaves it overlapping. Sphere against
//! sphere and sphere against a fixed body are such pairs.
//!
//! **Implied rows.** Within one QP a translation of a body or an offset of a plane moves
//! every vertex of a part alike against the plane; only the bounded rotation and tilt change
//! which vertex is nearest. So a critical vertex far enough below the part's nearest one
//! cannot come to bind in this step, and its row is left out (`GroupQpBuilder::add_side`):
//! the QP's feasible set is the same. A pile's pairs hold every vertex critical while the
//! bodies' targets lie deep in one another; this leaves the rows of the faces and edges in
//! contact (on `oba_cubejam`'s first 20 frames, 0.65 times the rows).
//!
//! **Trust region and merit.** Each group of bodies joined by pairs and joints iterates on its
//! own. Its rotations and plane tilts are bounded per iteration by `oba.rotation_bound` times
//! the group's trust `tau` (and its translations by `tau` times its largest deficit); a step
//! is kept when the merit `f + mu V` (distance to the targets plus `mu` times the pairs'
//! shortfall below `gap / 2` and the joints' residuals, `mu` twice the largest pair or joint
//! multiplier of the QP) falls by at least a tenth of what the QP predicted. A step that falls
//! short is undone and `tau` quartered, unless it ran into vertices or pairs the QP did not
//! know (Table 6.1's reckless update: they are added and the QP is solved again); a step that
//! does better than predicted doubles `tau` up to 1. A group has converged when its QP
//! predicts a fall of at most [`CONVERGED`] of the objective, or moves no point of its bodies
//! by more than `gap / 10` (nothing is left at the resolution of the gap: a chain hanging at
//! rest, or a trust region shrunk to nothing). It is done when it is clean (every pair at
//! least `gap / 10` apart) and has converged, or has kept a step that learnt nothing and moved
//! no body by more than the contact distance; and, clean or not, when a step it keeps lowers
//! its objective by less than `oba.min_progress` of it. That is a pile crawling: its bodies
//! turn against the rotation bounds, each step leaves a few pairs overlapping that the next
//! undoes, and the objective falls a percent or two an iteration up to the limit, where the
//! thesis reports 2 to 4 iterations (measured on `oba_cubejam`, `oba_jacks` and `oba_wall`:
//! the same step from the same start ends as near its targets, median over the steps, with
//! 20 to 25% fewer QPs). With `oba.stop_on_accurate_step` a group with joints is also done
//! at a clean step it keeps that learnt nothing, reached none of its bounds and fell short of
//! the QP's predicted fall by less than `oba.min_progress` of the objective left: the next
//! QP, linearized where this one's model held that well, could gain about that shortfall. A
//! swinging chain's first QP restores its joints and a second only confirmed it
//! (`oba_pendulum`: a fifth fewer position QPs, the same distance to the targets). Not for
//! groups without joints: the QPs after such a step settle resting contacts (on `oba_stack`,
//! stopping there left 9% more contacts and the static-contact QPs took 1.3 times the
//! instructions), and not at a step against a bound, since the next may turn further (on
//! `oba_wall`, a version that stopped at such steps left some groups 1.2 to 7 times as far
//! from their targets).
//!
//! **Ending clean.** A group that reaches `oba.max_iterations` overlapping takes up to
//! [`REPAIRS`] more QPs that stay as near as possible to where it is (its targets set to its
//! poses), which remove the small overlaps linearization leaves; if it is still not clean it
//! goes back to its last clean poses (`fallback`). The poses returned are then verified: every
//! pair of parts whose boxes touch, one of them movable, must be `gap / 10` apart by the
//! signed distance; a group in such a pair that moved goes back to its last clean poses (to the
//! step's start at worst), until the configuration verifies.

use glam::{DMat3, DVec3};
use hashbrown::HashMap;

use super::body::{rotation_between, Body, Pose};
use super::geometry::{separation, tangent_frame, Separation, WorldPart};
use super::qp::{Qp, QpFailure};
use super::World;
use crate::scene::rigid::Objective;

/// A rotation or tilt at least this fraction of its bound has reached it.
const REACHED: f64 = 0.99;

/// A group has converged when its QP predicts the objective can fall by at most this fraction.
pub(crate) const CONVERGED: f64 = 1e-3;

/// Which critical vertices of a pair get rows in a group's QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rows {
    /// Every one (the reference the screening is tested against).
    #[cfg(test)]
    All,
    /// Those whose rows no other row implies within the step's bounds.
    Screened,
}

/// A vertex's row is left out when another's implies it with this factor to spare.
const IMPLIED_MARGIN: f64 = 1.01;

/// QPs a group that ends its iterations overlapping may take to remove the overlap.
pub(crate) const REPAIRS: u32 = 3;

/// A pair of parts nearer than the contact distance at the final poses, with its separation.
#[derive(Clone, Debug)]
pub(crate) struct ClosePair {
    /// The two parts (flat indices into [`World::parts`]), smaller first.
    pub parts: (usize, usize),
    /// Their separation at the final poses.
    pub separation: Separation,
}

/// What one position update did.
#[derive(Clone, Debug, Default)]
pub(crate) struct PositionOutcome {
    /// The pairs nearer than the contact distance at the final poses, in part order.
    pub pairs: Vec<ClosePair>,
    /// Close pairs: the pairs of parts the QPs kept apart.
    pub close_pairs: u32,
    /// QPs solved (repairs included).
    pub qps: u32,
    /// Steps undone: the merit did not fall enough, or the QP was infeasible.
    pub rollbacks: u32,
    /// Iterations (the most any group took).
    pub iterations: u32,
    /// Repair QPs taken by groups that ended their iterations overlapping.
    pub repairs: u32,
    /// Whether some group ended at an earlier clean configuration than its last iterate.
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
pub(crate) struct Stuck {
    /// One body.
    pub a: String,
    /// The other.
    pub b: String,
    /// Overlap (cm).
    pub depth: f64,
}

/// Why a position update returned no poses.
#[derive(Clone, Debug, thiserror::Error)]
pub(crate) enum Unfinished {
    /// No overlap-free poses were found.
    #[error(transparent)]
    Stuck(#[from] Stuck),
    /// The run's stop flag was set between two QPs.
    #[error("interrupted")]
    Interrupted,
}

/// A separating plane `n.x = d`, unit `n` pointing from the pair's first part to its second.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Plane {
    n: DVec3,
    d: f64,
}

impl Plane {
    /// The mid-plane across the signed-distance normal (eq. 6.20).
    fn between(a: &WorldPart, sep: Separation) -> Self {
        let n = sep.normal;
        let top_a = a
            .vertices
            .iter()
            .map(|v| v.dot(n))
            .fold(f64::NEG_INFINITY, f64::max)
            + a.radius;
        Self {
            n,
            d: top_a + 0.5 * sep.distance,
        }
    }

    /// The plane carried along by a body moving from pose `from` to pose `to`.
    fn moved(&self, from: &Pose, to: &Pose) -> Self {
        let turn = to.rotation * from.rotation.transpose();
        let point = self.n * self.d;
        let n = turn * self.n;
        Self {
            n,
            d: n.dot(to.position + turn * (point - from.position)),
        }
    }

    /// Whether no vertex of `a` (first side) or `b` is more than `slack` on the wrong side.
    fn holds(&self, a: &WorldPart, b: &WorldPart, slack: f64) -> bool {
        let worst = |part: &WorldPart, side: f64| {
            part.vertices
                .iter()
                .map(|&v| self.height(part, v, side))
                .fold(f64::NEG_INFINITY, f64::max)
        };
        worst(a, 1.0) <= slack && worst(b, -1.0) <= slack
    }

    /// The height of `part`'s vertex `v` above the plane toward the other part (`side` +1 for
    /// the first part, -1 for the second), its radius included: how far it is from violating.
    fn height(&self, part: &WorldPart, v: DVec3, side: f64) -> f64 {
        side * (self.n.dot(v) - self.d) + part.radius
    }
}

/// What a position update hands the next one (warm start): the close pairs' planes, critical
/// vertices and multipliers, and the joints' multipliers. A remembered plane is taken again
/// when no vertex is more than the contact distance on its wrong side at the new start.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Memory {
    pairs: HashMap<(usize, usize), Pair>,
    joint_duals: Vec<DVec3>,
}

/// A close pair in the update: its parts and bodies, its carried plane, its critical
/// vertices, and its signed distance at the current poses.
#[derive(Clone, Debug, PartialEq)]
struct Pair {
    parts: (usize, usize),
    bodies: (usize, usize),
    plane: Plane,
    critical: (Vec<u32>, Vec<u32>),
    /// The multipliers of the critical vertices' rows in the last QP (missing: 0).
    duals: (Vec<f64>, Vec<f64>),
    separation: Separation,
}

/// What a group's QP proposes: the new poses of its bodies and planes of its pairs, the
/// model's predicted fall of the objective, and `mu` for the merit.
struct Proposal {
    poses: Vec<(usize, Pose)>,
    planes: Vec<(usize, Plane)>,
    predicted: f64,
    mu: f64,
    largest_move: f64,
    /// Whether a rotation, a plane's tilt or the trust region bounded the step (a step
    /// inside every bound is the linearized problem's own minimum).
    bounded: bool,
}

/// One iteration's trial: every group's proposed poses tried together.
struct Trial {
    /// The poses tried.
    poses: Vec<Pose>,
    /// Parts posed at `poses`.
    parts: Vec<WorldPart>,
    /// The known pairs' separations at `poses`.
    separations: Vec<f64>,
    /// The known pairs' separations at the current poses.
    current_separations: Vec<f64>,
    /// Pairs `poses` brings close that are not known yet, with their separations.
    found: Vec<(usize, usize, f64)>,
}

/// The state of one position update.
struct Update<'a> {
    world: &'a World,
    bodies: &'a [Body],
    targets: &'a [Pose],
    movable: &'a [bool],
    /// Current poses (immovable bodies at their targets).
    cur: Vec<Pose>,
    /// Parts posed at `cur`.
    parts: Vec<WorldPart>,
    /// Whether each part moves only as its body translates: a sphere centred on its body's
    /// centre of mass, or a part of an immovable body (see [`GroupQpBuilder::add_slab_row`]).
    translating: Vec<bool>,
    /// Each body's last poses at which its group was clean.
    clean: Vec<Pose>,
    /// Each body's trust in its group's linearization, in (0, 1].
    trust: Vec<f64>,
    /// Whether each body's group has converged.
    done: Vec<bool>,
    /// Rotation weights of the objective (world frame, at the step's start).
    rotation_weight: Vec<DMat3>,
    pairs: Vec<Pair>,
    index: HashMap<(usize, usize), usize>,
    /// Each joint's multiplier in the last QP of its group.
    joint_duals: Vec<DVec3>,
    outcome: PositionOutcome,
}

/// Runs the position update: `bodies[i].pose` is the start, `targets[i]` the target;
/// immovable bodies (`movable[i] == false`) are at their targets already. On success the
/// bodies' poses are the new ones; otherwise they and `memory` are as they were. `stop` is
/// asked before every QP: once it says so, the update ends with [`Unfinished::Interrupted`]
/// (a crowded step can take minutes).
pub(crate) fn update(
    world: &World,
    bodies: &mut [Body],
    targets: &[Pose],
    movable: &[bool],
    memory: &mut Memory,
    stop: &dyn Fn() -> bool,
) -> Result<PositionOutcome, Unfinished> {
    let mut u = Update::new(world, bodies, targets, movable, memory);
    u.iterate(stop)?;
    u.repair(stop)?;
    let near = u.verify()?;
    let outcome = u.finish(near);
    *memory = u.remember();
    let poses = u.cur;
    for (b, pose) in bodies.iter_mut().zip(poses) {
        b.pose = pose;
    }
    Ok(outcome)
}

impl<'a> Update<'a> {
    fn new(
        world: &'a World,
        bodies: &'a [Body],
        targets: &'a [Pose],
        movable: &'a [bool],
        memory: &Memory,
    ) -> Self {
        let n = bodies.len();
        let cur: Vec<Pose> = (0..n)
            .map(|i| {
                if movable[i] {
                    bodies[i].pose
                } else {
                    targets[i]
                }
            })
            .collect();
        let rotation_weight = bodies
            .iter()
            .zip(&cur)
            .map(|(b, p)| match world.settings.objective {
                Objective::Mass => p.rotation * b.inertia * p.rotation.transpose(),
                Objective::Diameter => DMat3::from_diagonal(DVec3::splat(b.diameter.powi(2))),
            })
            .collect();
        let parts = world.pose_parts(bodies, &cur);
        let translating = world
            .parts
            .iter()
            .map(|&(b, k)| !movable[b] || bodies[b].parts[k].is_centred_sphere())
            .collect();
        let mut u = Self {
            world,
            bodies,
            targets,
            movable,
            clean: cur.clone(),
            cur,
            parts,
            translating,
            trust: vec![1.0; n],
            done: vec![false; n],
            rotation_weight,
            pairs: Vec::new(),
            index: HashMap::new(),
            joint_duals: if memory.joint_duals.len() == world.joints.len() {
                memory.joint_duals.clone()
            } else {
                vec![DVec3::ZERO; world.joints.len()]
            },
            outcome: PositionOutcome::default(),
        };
        u.start_pairs(&memory.pairs);
        u
    }

    /// Finds the close pairs and where each group starts. The boxes swept from the start to
    /// the targets give the pairs that could meet; a pair whose signed distances at the start
    /// and at the targets exceed how far its parts move relative to each other (`m`) by
    /// `gap / 5` stays `gap / 10` apart all the way and is left out, unless a joint links its
    /// bodies (a joint moves each by the other, which their free-flight targets do not show:
    /// a chain's neighbours would otherwise be found only when a step ran into them, and
    /// the step undone). The others are close;
    /// one overlapping at the targets by more than the contact distance, or with a part ending
    /// more than half the thinner part's width beyond the start's separating plane carried
    /// along by the other part (it may have passed through), is deep. Bodies joined by swept pairs and joints with no deep pair among them start at
    /// their targets (the thesis: without overlap at the targets nothing is left to resolve),
    /// the others at the step's start.
    fn start_pairs(&mut self, remembered: &HashMap<(usize, usize), Pair>) {
        let (world, movable) = (self.world, self.movable);
        let s = &world.settings;
        let n = self.bodies.len();
        let target_parts = world.pose_parts(self.bodies, self.targets);
        let grow = s.contact_distance;
        let swept = World::swept_boxes(&self.parts, &target_parts, grow);
        let mut sets = UnionFind::new(n);
        for j in &world.joints {
            if movable[j.bodies[0]] && movable[j.bodies[1]] {
                sets.union(j.bodies[0], j.bodies[1]);
            }
        }
        let mut deep = vec![false; n];
        let mut close = Vec::new();
        for (p, q) in world.candidates(&swept, movable) {
            let (a, b) = (world.parts[p].0, world.parts[q].0);
            if movable[a] && movable[b] {
                sets.union(a, b);
            }
            let before = separation(&self.parts[p], &self.parts[q]);
            let after = separation(&target_parts[p], &target_parts[q]).distance;
            let relative = self.reach(a, b) - s.contact_distance;
            if 0.5 * (before.distance + after - relative) >= 0.1 * s.gap && !world.jointed(a, b) {
                continue;
            }
            close.push((p, q));
            // The start's plane carried along by each part: the other part ending beyond it
            // has passed through.
            let plane = Plane::between(&self.parts[p], before);
            let beyond = |carrier: usize, other: &WorldPart, side: f64| {
                let moved = plane.moved(&self.cur[carrier], &self.targets[carrier]);
                other
                    .vertices
                    .iter()
                    .map(|&v| moved.height(other, v, side))
                    .fold(f64::NEG_INFINITY, f64::max)
            };
            let passed = beyond(a, &target_parts[q], -1.0).max(beyond(b, &target_parts[p], 1.0));
            let through = 0.5 * target_parts[p].width().min(target_parts[q].width());
            if after < -s.contact_distance || passed > through.max(s.contact_distance) {
                deep[a] |= movable[a];
                deep[b] |= movable[b];
            }
        }
        let mut deep_set = vec![false; n];
        for i in (0..n).filter(|&i| deep[i]) {
            deep_set[sets.find(i)] = true;
        }
        for i in (0..n).filter(|&i| movable[i]) {
            if !deep_set[sets.find(i)] {
                self.cur[i] = self.targets[i];
            }
        }
        self.pose_current();
        let slack = s.contact_distance;
        for (p, q) in close {
            match remembered.get(&(p, q)) {
                Some(pair) if pair.plane.holds(&self.parts[p], &self.parts[q], slack) => {
                    let mut pair = pair.clone();
                    pair.separation = separation(&self.parts[p], &self.parts[q]);
                    self.index.insert((p, q), self.pairs.len());
                    self.pairs.push(pair);
                }
                _ => self.add_pair(p, q),
            }
        }
    }

    /// The memory for the next update.
    fn remember(&mut self) -> Memory {
        Memory {
            pairs: self.pairs.drain(..).map(|p| (p.parts, p)).collect(),
            joint_duals: std::mem::take(&mut self.joint_duals),
        }
    }

    /// How far the parts of bodies `a` and `b` could still come closer on the way to their
    /// targets, plus the contact distance.
    fn reach(&self, a: usize, b: usize) -> f64 {
        let deficit = |i: usize| {
            if !self.movable[i] {
                return (DVec3::ZERO, 0.0);
            }
            let (c, t) = (self.cur[i], self.targets[i]);
            (
                t.position - c.position,
                rotation_between(c.orientation, t.orientation).length() * self.bodies[i].reach,
            )
        };
        let ((xa, ra), (xb, rb)) = (deficit(a), deficit(b));
        self.world.settings.contact_distance + (xa - xb).length() + ra + rb
    }

    /// Adds parts `p < q` as a close pair, its plane from the geometry at the current poses.
    fn add_pair(&mut self, p: usize, q: usize) {
        if self.index.contains_key(&(p, q)) {
            return;
        }
        let (a, b) = (self.world.parts[p].0, self.world.parts[q].0);
        let sep = separation(&self.parts[p], &self.parts[q]);
        self.index.insert((p, q), self.pairs.len());
        self.pairs.push(Pair {
            parts: (p, q),
            bodies: (a, b),
            plane: Plane::between(&self.parts[p], sep),
            critical: (Vec::new(), Vec::new()),
            duals: (Vec::new(), Vec::new()),
            separation: sep,
        });
        self.done[a] &= !self.movable[a];
        self.done[b] &= !self.movable[b];
    }

    /// Whether `pair`'s parts both move only as their bodies translate: its QP row is then
    /// the slab along its current normal ([`GroupQpBuilder::add_slab_row`]), with no plane
    /// and no critical vertices.
    fn is_slab_pair(&self, pair: &Pair) -> bool {
        self.translating[pair.parts.0] && self.translating[pair.parts.1]
    }

    /// Adds to each pair's critical sets (slab pairs have none) the vertices within its reach of its plane or beyond
    /// it (at the current poses); the bodies whose pairs gained some.
    fn find_critical(&mut self) -> Vec<bool> {
        let mut learnt = vec![false; self.bodies.len()];
        for k in 0..self.pairs.len() {
            if self.is_slab_pair(&self.pairs[k]) {
                continue;
            }
            let (a, b) = self.pairs[k].bodies;
            let reach = self.reach(a, b);
            let pair = &mut self.pairs[k];
            let (p, q) = pair.parts;
            let added = add_critical(
                &mut pair.critical.0,
                &self.parts[p],
                &pair.plane,
                1.0,
                reach,
            ) | add_critical(
                &mut pair.critical.1,
                &self.parts[q],
                &pair.plane,
                -1.0,
                reach,
            );
            if added {
                learnt[a] = true;
                learnt[b] = true;
            }
        }
        learnt
    }

    /// The groups of movable bodies joined by pairs and joints, each sorted, in order of their
    /// smallest body.
    fn groups(&self) -> Vec<Vec<usize>> {
        let n = self.bodies.len();
        let mut sets = UnionFind::new(n);
        let joined = self
            .pairs
            .iter()
            .map(|p| p.bodies)
            .chain(self.world.joints.iter().map(|j| (j.bodies[0], j.bodies[1])));
        for (a, b) in joined {
            if self.movable[a] && self.movable[b] {
                sets.union(a, b);
            }
        }
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); n];
        for i in (0..n).filter(|&i| self.movable[i]) {
            members[sets.find(i)].push(i);
        }
        members.into_iter().filter(|g| !g.is_empty()).collect()
    }

    /// The distance-to-target objective of `group` at `poses` (eq. 6.7 or 6.8 without the
    /// factor 1/2 of the QP's form), toward `targets`.
    fn objective(&self, group: &[usize], poses: &[Pose], targets: &[Pose]) -> f64 {
        group
            .iter()
            .map(|&i| {
                let (c, t) = (poses[i], targets[i]);
                let dx = t.position - c.position;
                let dphi = rotation_between(c.orientation, t.orientation);
                let mass = match self.world.settings.objective {
                    Objective::Mass => self.bodies[i].mass,
                    Objective::Diameter => 1.0,
                };
                mass * dx.length_squared() + dphi.dot(self.rotation_weight[i] * dphi)
            })
            .sum()
    }

    /// The shortfall of `group`'s pairs below `gap` (their separations in `separations`), what
    /// its QPs ask, and its joints' residuals at `poses`.
    fn violation(&self, group: &[bool], poses: &[Pose], separations: &[f64]) -> f64 {
        let gap = self.world.settings.gap;
        let pairs: f64 = self
            .pairs
            .iter()
            .zip(separations)
            .filter(|(p, _)| group[p.bodies.0] || group[p.bodies.1])
            .map(|(_, &s)| (gap - s).max(0.0))
            .sum();
        let joints: f64 = self
            .world
            .joints
            .iter()
            .filter(|j| group[j.bodies[0]] || group[j.bodies[1]])
            .map(|j| {
                let [a, b] = j.bodies;
                poses[a]
                    .apply(j.anchors[0])
                    .distance(poses[b].apply(j.anchors[1]))
            })
            .sum();
        pairs + joints
    }

    /// The iterations: every group not done solves its QP, the steps are tried, and each group
    /// keeps or undoes its own by the merit. Interrupted when `stop` says so.
    fn iterate(&mut self, stop: &dyn Fn() -> bool) -> Result<(), Unfinished> {
        let s = &self.world.settings;
        let n = self.bodies.len();
        self.find_critical();
        for iteration in 0..s.max_iterations {
            if stop() {
                return Err(Unfinished::Interrupted);
            }
            let groups: Vec<Vec<usize>> = self
                .groups()
                .into_iter()
                .filter(|g| g.iter().any(|&i| !self.done[i]))
                .collect();
            if groups.is_empty() {
                break;
            }
            self.outcome.iterations = iteration + 1;
            let (poses, proposals) = self.propose_all(&groups);
            let trial = self.try_poses(poses);
            let mut in_group = vec![false; n];
            for (group, proposal) in groups.iter().zip(proposals) {
                let Some(proposal) = proposal else { continue };
                for &i in group {
                    in_group[i] = true;
                }
                self.judge(group, &proposal, &trial, &in_group);
                for &i in group {
                    in_group[i] = false;
                }
            }
            self.pose_current();
            for (p, q, _) in trial.found {
                self.add_pair(p, q);
            }
            self.find_critical();
        }
        Ok(())
    }

    /// Every group's proposal, and the trial poses: the proposals' poses, and for a group
    /// whose QP failed its last clean poses (to which it rolls back).
    fn propose_all(&mut self, groups: &[Vec<usize>]) -> (Vec<Pose>, Vec<Option<Proposal>>) {
        let mut trial = self.cur.clone();
        let mut proposals: Vec<Option<Proposal>> = Vec::with_capacity(groups.len());
        for group in groups {
            let tau = group.iter().map(|&i| self.trust[i]).fold(1.0, f64::min);
            let proposal = self.propose(group, self.targets, tau);
            match &proposal {
                Some(p) => {
                    for &(i, pose) in &p.poses {
                        trial[i] = pose;
                    }
                }
                None => {
                    // Infeasible: back to the group's last clean poses.
                    self.outcome.rollbacks += 1;
                    for &i in group {
                        if self.cur[i] == self.clean[i] {
                            self.done[i] = true;
                        }
                        self.cur[i] = self.clean[i];
                        trial[i] = self.clean[i];
                    }
                }
            }
            proposals.push(proposal);
        }
        (trial, proposals)
    }

    /// The trial at `poses`: its parts, the known pairs' separations there and now, and the
    /// pairs it brings close that are not known yet.
    fn try_poses(&self, poses: Vec<Pose>) -> Trial {
        let parts = self.world.pose_parts(self.bodies, &poses);
        let separations = self
            .pairs
            .iter()
            .map(|p| separation(&parts[p.parts.0], &parts[p.parts.1]).distance)
            .collect();
        let current_separations = self.pairs.iter().map(|p| p.separation.distance).collect();
        let found = self.unknown_pairs(&parts);
        Trial {
            poses,
            parts,
            separations,
            current_separations,
            found,
        }
    }

    /// Keeps or undoes the step `proposal` of `group` (whose bodies `in_group` marks) by the
    /// merit at `trial`, adjusts the group's trust, and marks it clean and done as it is.
    fn judge(&mut self, group: &[usize], proposal: &Proposal, trial: &Trial, in_group: &[bool]) {
        let world = self.world;
        let s = &world.settings;
        let touches = |&(p, q, _): &(usize, usize, f64)| {
            in_group[world.parts[p].0] || in_group[world.parts[q].0]
        };
        let unknown: f64 = trial
            .found
            .iter()
            .filter(|f| touches(f))
            .map(|&(_, _, d)| (s.gap - d).max(0.0))
            .sum();
        // Vertices the trial's planes and poses bring within reach (the reckless update):
        // learnt whether the step is kept or not.
        let mut learnt = trial.found.iter().any(touches);
        learnt |= self.learn_critical(proposal, &trial.parts);
        let violation_now = self.violation(in_group, &self.cur, &trial.current_separations);
        let violation_trial = self.violation(in_group, &trial.poses, &trial.separations) + unknown;
        let before = self.objective(group, &self.cur, self.targets) + proposal.mu * violation_now;
        let after =
            self.objective(group, &trial.poses, self.targets) + proposal.mu * violation_trial;
        let predicted = proposal.predicted + proposal.mu * violation_now;
        let actual = before - after;
        let tau = group.iter().map(|&i| self.trust[i]).fold(1.0, f64::min);
        // Nothing left to gain: the group stays where it is, converged if clean.
        let objective_now = self.objective(group, &self.cur, self.targets);
        let converged =
            predicted <= CONVERGED * objective_now || proposal.largest_move <= 0.1 * s.gap;
        let keep = !converged && actual >= 0.1 * predicted;
        let separations = if keep {
            let grown = if actual > 0.75 * predicted {
                (2.0 * tau).min(1.0)
            } else {
                tau
            };
            self.keep_step(group, proposal, grown);
            &trial.separations
        } else {
            if !converged {
                self.outcome.rollbacks += 1;
                for &i in group {
                    self.trust[i] = if learnt { tau } else { 0.25 * tau };
                }
            }
            &trial.current_separations
        };
        let clean = !(keep && trial.found.iter().any(touches))
            && self
                .pairs
                .iter()
                .zip(separations)
                .filter(|(p, _)| in_group[p.bodies.0] || in_group[p.bodies.1])
                .all(|(_, &d)| d >= 0.1 * s.gap);
        if clean {
            for &i in group {
                self.clean[i] = self.cur[i];
                // Clean and settled: done.
                self.done[i] =
                    converged || keep && !learnt && proposal.largest_move < s.contact_distance;
            }
        }
        // A crawl: the repairs take what overlap the group has left.
        let crawl = keep && actual < s.min_progress * objective_now;
        // An accurate step of a jointed group: the next QP, linearized where this one's model
        // held to within `predicted - actual`, could gain about that much.
        let accurate = || {
            s.stop_on_accurate_step
                && s.min_progress > 0.0
                && keep
                && clean
                && !learnt
                && !proposal.bounded
                && (world.joints.iter()).any(|j| in_group[j.bodies[0]] || in_group[j.bodies[1]])
                && predicted - actual
                    < s.min_progress * self.objective(group, &self.cur, self.targets)
        };
        if crawl || accurate() {
            for &i in group {
                self.done[i] = true;
            }
        }
    }

    /// Adds the vertices of the proposal's pairs that its planes bring within the contact
    /// distance at the trial's `parts` to their critical sets: whether any was new.
    fn learn_critical(&mut self, proposal: &Proposal, parts: &[WorldPart]) -> bool {
        let reach = self.world.settings.contact_distance;
        let mut learnt = false;
        for &(k, plane) in &proposal.planes {
            let pair = &mut self.pairs[k];
            let (p, q) = pair.parts;
            learnt |= add_critical(&mut pair.critical.0, &parts[p], &plane, 1.0, reach)
                | add_critical(&mut pair.critical.1, &parts[q], &plane, -1.0, reach);
        }
        learnt
    }

    /// Takes the step `proposal` of `group`: its poses and planes, and trust `grown`.
    fn keep_step(&mut self, group: &[usize], proposal: &Proposal, grown: f64) {
        for &(i, pose) in &proposal.poses {
            self.cur[i] = pose;
        }
        for &(k, plane) in &proposal.planes {
            self.pairs[k].plane = plane;
        }
        for &i in group {
            self.trust[i] = grown;
        }
    }

    /// Parts nearer than `gap / 2` as posed in `parts` that are not a known pair (what a move
    /// ran into), with their separations.
    fn unknown_pairs(&self, parts: &[WorldPart]) -> Vec<(usize, usize, f64)> {
        let grow = 0.5 * self.world.settings.gap;
        let boxes: Vec<_> = parts
            .iter()
            .map(|p| {
                let (lo, hi) = p.bounds();
                (lo - grow, hi + grow)
            })
            .collect();
        self.world
            .candidates(&boxes, self.movable)
            .into_iter()
            .filter(|pair| !self.index.contains_key(pair))
            .filter_map(|(p, q)| {
                let d = separation(&parts[p], &parts[q]).distance;
                (d < grow).then_some((p, q, d))
            })
            .collect()
    }

    /// Re-poses the parts at `cur` and the pairs' separations.
    fn pose_current(&mut self) {
        self.parts = self.world.pose_parts(self.bodies, &self.cur);
        for pair in &mut self.pairs {
            pair.separation = separation(&self.parts[pair.parts.0], &self.parts[pair.parts.1]);
        }
    }

    /// Solves `group`'s QP toward `targets` with trust `tau`: the proposal, or `None` when the
    /// QP is infeasible or unsolved.
    fn propose(&mut self, group: &[usize], targets: &[Pose], tau: f64) -> Option<Proposal> {
        let constrained = self
            .world
            .joints
            .iter()
            .any(|j| group.contains(&j.bodies[0]) || group.contains(&j.bodies[1]))
            || self
                .pairs
                .iter()
                .any(|p| group.contains(&p.bodies.0) || group.contains(&p.bodies.1));
        if !constrained {
            // A lone body goes straight to its target.
            let poses: Vec<(usize, Pose)> = group.iter().map(|&i| (i, targets[i])).collect();
            let largest_move = group
                .iter()
                .map(|&i| displacement(&self.bodies[i], &self.cur[i], &targets[i]))
                .fold(0.0, f64::max);
            return Some(Proposal {
                poses,
                planes: Vec::new(),
                predicted: self.objective(group, &self.cur, targets),
                mu: 0.0,
                largest_move,
                bounded: false,
            });
        }
        let qp = GroupQp::build(self, group, targets, tau, Rows::Screened);
        self.outcome.qps += 1;
        let solution = match qp.qp.solve_with_duals() {
            Ok(s) => s,
            Err(QpFailure::Infeasible | QpFailure::Unsolved(_)) => return None,
        };
        let x = &solution.x;
        let mut largest_move: f64 = 0.0;
        let poses = group
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let dx = DVec3::new(x[6 * k], x[6 * k + 1], x[6 * k + 2]);
                let dphi = DVec3::new(x[6 * k + 3], x[6 * k + 4], x[6 * k + 5]);
                largest_move = largest_move.max(dx.length() + dphi.length() * self.bodies[i].reach);
                (i, self.cur[i].perturbed(dx, dphi))
            })
            .collect();
        let bound = self.world.settings.rotation_bound * tau;
        let reached = |value: f64| value.abs() >= REACHED * bound;
        let bounded = tau < 1.0
            || (0..group.len()).any(|k| (3..6).any(|axis| reached(x[6 * k + axis])))
            || (qp.pairs.iter())
                .any(|slot| reached(x[slot.variables]) || reached(x[slot.variables + 1]));
        let z = &solution.inequality_duals;
        for slot in &qp.pairs {
            let pair = &mut self.pairs[slot.pair];
            pair.duals = (slot.rows.0.duals(z), slot.rows.1.duals(z));
        }
        for (&j, z) in qp.joints.iter().zip(solution.equality_duals.chunks(3)) {
            self.joint_duals[j] = DVec3::new(z[0], z[1], z[2]);
        }
        let mut mu: f64 = qp
            .slab_rows
            .iter()
            .map(|&row| 2.0 * z[row])
            .fold(0.0, f64::max);
        let planes = qp
            .pairs
            .iter()
            .map(|slot| {
                let v = slot.variables;
                let plane = &self.pairs[slot.pair].plane;
                let (nx, ny) = tangent_frame(plane.n);
                let m = plane.n + x[v] * nx + x[v + 1] * ny;
                let length = m.length();
                let force = slot.rows.0.force(z);
                mu = mu.max(2.0 * force);
                (
                    slot.pair,
                    Plane {
                        n: m / length,
                        d: (m.dot(slot.pivot) + x[v + 2]) / length,
                    },
                )
            })
            .collect();
        for j in solution.equality_duals.chunks(3) {
            mu = mu.max(2.0 * (j.iter().map(|z| z * z).sum::<f64>()).sqrt());
        }
        // At least the objective's own pull, so that a violation never pays for itself.
        let pull = group
            .iter()
            .map(|&i| {
                let b = &self.bodies[i];
                let mass = match self.world.settings.objective {
                    Objective::Mass => b.mass,
                    Objective::Diameter => 1.0,
                };
                2.0 * mass * displacement(b, &self.cur[i], &targets[i])
            })
            .fold(0.0, f64::max);
        Some(Proposal {
            poses,
            planes,
            predicted: -qp.qp.objective(x),
            mu: mu.max(pull),
            largest_move,
            bounded,
        })
    }

    /// Groups that end their iterations overlapping take up to [`REPAIRS`] QPs toward their
    /// own poses; those still overlapping go back to their last clean poses. Interrupted when
    /// `stop` says so.
    fn repair(&mut self, stop: &dyn Fn() -> bool) -> Result<(), Unfinished> {
        let gap = self.world.settings.gap;
        for round in 0..=REPAIRS {
            let overlapping: Vec<Vec<usize>> = self
                .groups()
                .into_iter()
                .filter(|g| {
                    self.pairs.iter().any(|p| {
                        (g.contains(&p.bodies.0) || g.contains(&p.bodies.1))
                            && p.separation.distance < 0.1 * gap
                    })
                })
                .collect();
            if overlapping.is_empty() {
                return Ok(());
            }
            if round == REPAIRS {
                self.outcome.fallback = true;
                for &i in overlapping.iter().flatten() {
                    self.cur[i] = self.clean[i];
                }
                self.pose_current();
                return Ok(());
            }
            if stop() {
                return Err(Unfinished::Interrupted);
            }
            let here = self.cur.clone();
            for group in &overlapping {
                self.outcome.repairs += 1;
                if let Some(p) = self.propose(group, &here, 1.0) {
                    for (i, pose) in p.poses {
                        self.cur[i] = pose;
                    }
                    for (k, plane) in p.planes {
                        self.pairs[k].plane = plane;
                    }
                }
            }
            self.pose_current();
            let found = self.unknown_pairs(&self.parts);
            for (p, q, _) in found {
                self.add_pair(p, q);
            }
            self.find_critical();
        }
        Ok(())
    }

    /// Verifies the poses: every pair of parts whose boxes touch, one of them movable, at
    /// least `gap / 10` apart; the groups of a pair that is not go back to their last clean
    /// poses, then to the step's start. Fails only when the start itself overlaps. Returns
    /// the pairs nearer than the contact distance (the contacts' pairs).
    fn verify(&mut self) -> Result<Vec<(usize, usize, Separation)>, Stuck> {
        let s = &self.world.settings;
        let start: Vec<Pose> = (0..self.bodies.len())
            .map(|i| {
                if self.movable[i] {
                    self.bodies[i].pose
                } else {
                    self.targets[i]
                }
            })
            .collect();
        loop {
            let grow = s.contact_distance;
            let boxes: Vec<_> = self
                .parts
                .iter()
                .map(|p| {
                    let (lo, hi) = p.bounds();
                    (lo - grow, hi + grow)
                })
                .collect();
            let near: Vec<(usize, usize, Separation)> = self
                .world
                .candidates(&boxes, self.movable)
                .into_iter()
                .map(|(p, q)| (p, q, separation(&self.parts[p], &self.parts[q])))
                .filter(|(_, _, sep)| sep.distance < grow)
                .collect();
            let Some(&(p, q, worst)) = near
                .iter()
                .min_by(|x, y| x.2.distance.total_cmp(&y.2.distance))
                .filter(|w| w.2.distance < 0.1 * s.gap)
            else {
                return Ok(near);
            };
            let (a, b) = (self.world.parts[p].0, self.world.parts[q].0);
            self.outcome.fallback = true;
            let mut changed = false;
            for g in self
                .groups()
                .iter()
                .filter(|g| g.contains(&a) || g.contains(&b))
            {
                for &i in g {
                    let back = if self.cur[i] != self.clean[i] {
                        self.clean[i]
                    } else {
                        start[i]
                    };
                    changed |= back != self.cur[i];
                    self.cur[i] = back;
                    self.clean[i] = start[i];
                }
            }
            if !changed {
                return Err(Stuck {
                    a: self.bodies[a].name.clone(),
                    b: self.bodies[b].name.clone(),
                    depth: -worst.distance,
                });
            }
            self.pose_current();
        }
    }

    /// The outcome, with the pairs `near` (nearer than the contact distance at the final
    /// poses).
    fn finish(&mut self, near: Vec<(usize, usize, Separation)>) -> PositionOutcome {
        let mut outcome = std::mem::take(&mut self.outcome);
        outcome.close_pairs = self.pairs.len() as u32;
        outcome.pairs = near
            .into_iter()
            .map(|(p, q, separation)| ClosePair {
                parts: (p, q),
                separation,
            })
            .collect();
        outcome.min_separation = outcome
            .pairs
            .iter()
            .map(|p| p.separation.distance)
            .fold(f64::INFINITY, f64::min);
        outcome
    }
}

/// How far any point of `body` moves from pose `a` to pose `b` at most.
fn displacement(body: &Body, a: &Pose, b: &Pose) -> f64 {
    a.position.distance(b.position)
        + rotation_between(a.orientation, b.orientation).length() * body.reach
}

/// Adds to `set` the vertices of `part` (on side `side`: +1 for `A`, -1 for `B`) within
/// `reach` of the plane or beyond it; whether any was added.
fn add_critical(
    set: &mut Vec<u32>,
    part: &WorldPart,
    plane: &Plane,
    side: f64,
    reach: f64,
) -> bool {
    let before = set.len();
    for (k, v) in part.vertices.iter().enumerate() {
        if plane.height(part, *v, side) > -reach && !set.contains(&(k as u32)) {
            set.push(k as u32);
        }
    }
    set.len() > before
}

/// A pair's place in a group's QP: the pair, its first variable, the pivot its tilt turns
/// about, and its two parts' rows among the inequalities (the multipliers of either sum to
/// the pair's force).
struct PairSlot {
    pair: usize,
    variables: usize,
    pivot: DVec3,
    rows: (SideRows, SideRows),
}

/// The rows of one side of a pair: per critical vertex, its row among the inequalities, or
/// `None` where another vertex's row implies it within the step's bounds.
struct SideRows(Vec<Option<usize>>);

impl SideRows {
    /// Each critical vertex's multiplier in `z` (0 for a vertex without a row).
    fn duals(&self, z: &[f64]) -> Vec<f64> {
        self.0.iter().map(|row| row.map_or(0.0, |r| z[r])).collect()
    }

    /// The sum of the side's multipliers in `z`: the pair's force.
    fn force(&self, z: &[f64]) -> f64 {
        self.0.iter().flatten().map(|&r| z[r]).sum()
    }
}

/// The QP of one group: variables `6 k..6 k + 6` the perturbation of the group's `k`-th body,
/// then three per plane pair touching the group (tilt along `n_x`, along `n_y`, offset); one
/// row per slab pair (`slab_rows`, among the inequalities); its equalities are three per joint of the group, in the order of
/// `joints`.
struct GroupQp {
    qp: Qp,
    pairs: Vec<PairSlot>,
    slab_rows: Vec<usize>,
    joints: Vec<usize>,
}

impl GroupQp {
    fn build(u: &Update<'_>, group: &[usize], targets: &[Pose], tau: f64, rows: Rows) -> Self {
        let slot: HashMap<usize, usize> = group.iter().enumerate().map(|(k, &i)| (i, k)).collect();
        let touches = |a: usize, b: usize| slot.contains_key(&a) || slot.contains_key(&b);
        let (slab_list, pair_list): (Vec<usize>, Vec<usize>) = (0..u.pairs.len())
            .filter(|&k| {
                let (a, b) = u.pairs[k].bodies;
                touches(a, b)
            })
            .partition(|&k| u.is_slab_pair(&u.pairs[k]));
        let joints: Vec<usize> = (0..u.world.joints.len())
            .filter(|&j| {
                let [a, b] = u.world.joints[j].bodies;
                touches(a, b)
            })
            .collect();
        let base = 6 * group.len();
        let slack_base = base + 3 * pair_list.len();
        let mut b = GroupQpBuilder {
            u,
            group,
            targets,
            slot,
            qp: Qp::new(slack_base + 6 * joints.len()),
            rotation_bound: u.world.settings.rotation_bound * tau,
            rows,
            curvature: vec![DMat3::ZERO; group.len()],
        };
        b.add_objective(tau);
        let pairs = pair_list
            .iter()
            .enumerate()
            .map(|(j, &k)| b.add_pair_slot(k, base + 3 * j))
            .collect();
        let slab_rows = slab_list.iter().map(|&k| b.add_slab_row(k)).collect();
        b.add_joints(&joints, slack_base);
        let mut qp = b.qp;
        for (k, &i) in group.iter().enumerate() {
            add_rotation_curvature(
                &mut qp,
                6 * k + 3,
                2.0 * u.rotation_weight[i],
                b.curvature[k],
            );
        }
        Self {
            qp,
            pairs,
            slab_rows,
            joints,
        }
    }
}

/// The shared state of building one group's QP ([`GroupQp`]).
struct GroupQpBuilder<'s, 'a> {
    u: &'s Update<'a>,
    group: &'s [usize],
    targets: &'s [Pose],
    /// Each group body's place in the group.
    slot: HashMap<usize, usize>,
    qp: Qp,
    /// The bound on each rotation and tilt variable.
    rotation_bound: f64,
    /// Which critical vertices get rows.
    rows: Rows,
    /// The second-order terms of the rows' rotations, weighted by their multipliers in the
    /// last QP (the Hessian of the Lagrangian), per body.
    curvature: Vec<DMat3>,
}

impl GroupQpBuilder<'_, '_> {
    /// Body `i`'s place in the group, if it is in it.
    fn in_group(&self, i: usize) -> Option<usize> {
        self.slot.get(&i).copied()
    }

    /// The distance to the targets (eq. 6.7 or 6.8) and the bounds on each body's rotation,
    /// and with trust `tau < 1` on its translation.
    fn add_objective(&mut self, tau: f64) {
        let u = self.u;
        let s = &u.world.settings;
        let translation_scale = self
            .group
            .iter()
            .map(|&i| displacement(&u.bodies[i], &u.cur[i], &self.targets[i]))
            .fold(s.contact_distance, f64::max);
        let qp = &mut self.qp;
        for (k, &i) in self.group.iter().enumerate() {
            let (c, t) = (u.cur[i], self.targets[i]);
            let body = &u.bodies[i];
            let mass = match s.objective {
                Objective::Mass => body.mass,
                Objective::Diameter => 1.0,
            };
            qp.add_weighted_distance(
                6 * k,
                DMat3::from_diagonal(DVec3::splat(2.0 * mass)),
                t.position - c.position,
            );
            qp.add_weighted_distance(
                6 * k + 3,
                2.0 * u.rotation_weight[i],
                rotation_between(c.orientation, t.orientation),
            );
            for axis in 0..3 {
                qp.at_most(vec![(6 * k + 3 + axis, 1.0)], self.rotation_bound);
                qp.at_least(vec![(6 * k + 3 + axis, 1.0)], -self.rotation_bound);
                if tau < 1.0 {
                    let bound = tau * translation_scale;
                    qp.at_most(vec![(6 * k + axis, 1.0)], bound);
                    qp.at_least(vec![(6 * k + axis, 1.0)], -bound);
                }
            }
        }
    }

    /// Pair `k`'s variables from `variables` (tilt along `n_x`, along `n_y`, offset) and the
    /// rows of its two parts' critical vertices: its slot.
    fn add_pair_slot(&mut self, k: usize, variables: usize) -> PairSlot {
        let u = self.u;
        let pair = &u.pairs[k];
        for v in [variables, variables + 1] {
            self.qp.at_most(vec![(v, 1.0)], self.rotation_bound);
            self.qp.at_least(vec![(v, 1.0)], -self.rotation_bound);
        }
        let pivot = self.pivot(pair);
        let mut tilt_curvature = 0.0;
        let (p, q) = pair.parts;
        let first = (p, &pair.critical.0[..], &pair.duals.0[..], 1.0);
        let rows_p = self.add_side(pair, first, pivot, variables, &mut tilt_curvature);
        let second = (q, &pair.critical.1[..], &pair.duals.1[..], -1.0);
        let rows_q = self.add_side(pair, second, pivot, variables, &mut tilt_curvature);
        for v in [variables, variables + 1] {
            self.qp.add_hessian(v, v, tilt_curvature);
        }
        PairSlot {
            pair: k,
            variables,
            pivot,
            rows: (rows_p, rows_q),
        }
    }

    /// Slab pair `k`'s row, returning its index among the inequalities.
    ///
    /// When neither part of a pair turns with its body (a sphere about its own centre, or a
    /// part of an immovable body), the slab width along a fixed unit `n` (eq. 3.1) is linear
    /// in the bodies' translations: `D(n) + n.(dx_b - dx_a)`, exactly. The row asks that of
    /// the slab along the pair's current separation normal, `D(n) + n.(dx_b - dx_a) >= gap`;
    /// since every slab width is a lower bound of the signed distance, a step that keeps the
    /// row keeps the pair `gap` apart, leaving nothing for the next iteration to repair. The
    /// normal is taken from the geometry again at every iteration, as the thesis does with
    /// its planes. This is the plane constraint with the tilt fixed at zero and the offset
    /// eliminated: one row and no variables instead of two rows, three variables and their
    /// bounds.
    fn add_slab_row(&mut self, k: usize) -> usize {
        let pair = &self.u.pairs[k];
        let n = pair.separation.normal;
        let mut terms = Vec::new();
        for (body, sign) in [(pair.bodies.0, 1.0), (pair.bodies.1, -1.0)] {
            if let Some(b) = self.in_group(body) {
                terms.extend((0..3).map(|axis| (6 * b + axis, sign * n[axis])));
            }
        }
        let row = self.qp.inequalities.len();
        // n.(dx_a - dx_b) <= D(n) - gap.
        self.qp
            .at_most(terms, pair.separation.distance - self.u.world.settings.gap);
        row
    }

    /// The tilt turns the plane about the point on it nearest the critical vertices'
    /// centroid, where the pair's contact is.
    fn pivot(&self, pair: &Pair) -> DVec3 {
        let plane = pair.plane;
        let (p, q) = pair.parts;
        let critical_points = pair
            .critical
            .0
            .iter()
            .map(|&v| self.u.parts[p].vertices[v as usize])
            .chain(
                pair.critical
                    .1
                    .iter()
                    .map(|&v| self.u.parts[q].vertices[v as usize]),
            );
        let (sum, count) = critical_points.fold((DVec3::ZERO, 0.0), |(s, c), v| (s + v, c + 1.0));
        let centroid = if count > 0.0 {
            sum / count
        } else {
            plane.n * plane.d
        };
        centroid - (plane.n.dot(centroid) - plane.d) * plane.n
    }

    /// The rows of one side of `pair`: `part` with its critical vertices `set`, their last
    /// multipliers `duals`, on `side` (+1 first, -1 second) of the plane tilted about
    /// `pivot` by the pair's variables from `variables`. Adds the multipliers' curvature to
    /// the bodies' and to `tilt_curvature`; returns each vertex's row.
    ///
    /// A vertex gets no row when the row of the side's highest vertex implies its own for
    /// every step within the bounds (an exact presolve: the QP's feasible set and solution
    /// are the same). The two rows differ by the heights of the vertices (`h_top - h_v`) and
    /// by terms in the body's rotation and the plane's tilt only, since a translation or an
    /// offset moves every vertex of the part alike; with each rotation and tilt variable
    /// within `b`, those terms reach at most `b (|n_x.w| + |n_y.w| + |n x w|_1)` for
    /// `w = v - top`. A cube resting on a face keeps the rows of that face's four corners.
    fn add_side(
        &mut self,
        pair: &Pair,
        (part, set, duals, side): (usize, &[u32], &[f64], f64),
        pivot: DVec3,
        variables: usize,
        tilt_curvature: &mut f64,
    ) -> SideRows {
        let u = self.u;
        let gap = u.world.settings.gap;
        let plane = pair.plane;
        let (nx, ny) = tangent_frame(plane.n);
        let (dx_var, dy_var, e_var) = (variables, variables + 1, variables + 2);
        let body = u.world.parts[part].0;
        let wp = &u.parts[part];
        let group_body = self.in_group(body);
        let bound = self.rotation_bound;
        let height = |v: DVec3| plane.height(wp, v, side);
        // The side's highest vertex and its height, when rows it implies are left out.
        let top = set
            .iter()
            .map(|&vk| wp.vertices[vk as usize])
            .map(|v| (v, height(v)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .filter(|_| self.rows == Rows::Screened);
        // Whether the top vertex's row implies that of `v` within the bounds.
        let implied = |v: DVec3| {
            let Some((top, top_height)) = top else {
                return false;
            };
            let w = v - top;
            let turn = group_body.map_or(0.0, |_| plane.n.cross(w).abs().element_sum());
            let reach = bound * (nx.dot(w).abs() + ny.dot(w).abs() + turn);
            top_height - height(v) > IMPLIED_MARGIN * reach + f64::EPSILON * w.length()
        };
        let mut rows = Vec::with_capacity(set.len());
        for (r, &vk) in set.iter().enumerate() {
            let v = wp.vertices[vk as usize];
            let dual = duals.get(r).copied().unwrap_or(0.0);
            // The exact row divides by the tilted normal's length sqrt(1 + |delta|^2).
            *tilt_curvature += dual * (0.5 * gap + wp.radius);
            let lever = group_body.map(|b| (b, v - u.cur[body].position));
            if let Some((b, lever)) = lever {
                self.curvature[b] += dual * rotation_curvature(side * plane.n, lever);
            }
            if implied(v) {
                rows.push(None);
                continue;
            }
            let rel = v - pivot;
            let mut terms = vec![
                (dx_var, side * nx.dot(rel)),
                (dy_var, side * ny.dot(rel)),
                (e_var, -side),
            ];
            if let Some((b, lever)) = lever {
                let rot = -plane.n.cross(lever);
                for axis in 0..3 {
                    terms.push((6 * b + axis, side * plane.n[axis]));
                    terms.push((6 * b + 3 + axis, side * rot[axis]));
                }
            }
            rows.push(Some(self.qp.inequalities.len()));
            self.qp
                .at_most(terms, -0.5 * gap - wp.radius - side * plane.n.dot(rel));
        }
        SideRows(rows)
    }

    /// Joints are elastic: each row has a slack of either sign (variables from `slack_base`)
    /// at a price far above what the objective pays per cm, so a joint the contacts do not
    /// let close keeps the least residual instead of making the QP infeasible.
    fn add_joints(&mut self, joints: &[usize], slack_base: usize) {
        let u = self.u;
        let price = 20.0
            * self
                .group
                .iter()
                .map(|&i| {
                    let b = &u.bodies[i];
                    b.mass * (b.reach + displacement(b, &u.cur[i], &self.targets[i]))
                })
                .sum::<f64>();
        for (slot, &ji) in joints.iter().enumerate() {
            let j = &u.world.joints[ji];
            let [a, b] = j.bodies;
            let qa = u.cur[a].apply(j.anchors[0]);
            let qb = u.cur[b].apply(j.anchors[1]);
            let ends = [(a, qa, 1.0), (b, qb, -1.0)];
            for (body, point, sign) in ends {
                if let Some(k) = self.in_group(body) {
                    let lever = point - u.cur[body].position;
                    self.curvature[k] += rotation_curvature(sign * u.joint_duals[ji], lever);
                }
            }
            // qa + dx_a + dphi_a x ra = qb + dx_b + dphi_b x rb.
            for axis in 0..3 {
                let mut terms = Vec::new();
                for (body, point, sign) in ends {
                    if let Some(k) = self.in_group(body) {
                        let lever = point - u.cur[body].position;
                        terms.push((6 * k + axis, sign));
                        for i in 0..3 {
                            terms.push((6 * k + 3 + i, sign * DVec3::AXES[i].cross(lever)[axis]));
                        }
                    }
                }
                let (up, down) = (
                    slack_base + 6 * slot + 2 * axis,
                    slack_base + 6 * slot + 2 * axis + 1,
                );
                terms.push((up, 1.0));
                terms.push((down, -1.0));
                self.qp.equal(terms, qb[axis] - qa[axis]);
                for v in [up, down] {
                    self.qp.at_least(vec![(v, 1.0)], 0.0);
                    self.qp.linear[v] += price;
                }
            }
        }
    }
}

/// The Hessian in `dphi` of `u . (R(dphi) r)` at `dphi = 0`, where `R(dphi) r = r + dphi x r
/// + dphi x (dphi x r) / 2 + ...`: `(u r^T + r u^T) / 2 - (u . r) I`.
fn rotation_curvature(u: DVec3, r: DVec3) -> DMat3 {
    let outer = |a: DVec3, b: DVec3| DMat3::from_cols(a * b.x, a * b.y, a * b.z);
    0.5 * (outer(u, r) + outer(r, u)) - DMat3::from_diagonal(DVec3::splat(u.dot(r)))
}

/// Adds `curvature` to the rotation block `weight` at variables `at..at + 3`, scaled down by
/// halves as far as needed to keep the block at least a tenth of `weight` (convex), or left
/// out.
fn add_rotation_curvature(qp: &mut Qp, at: usize, weight: DMat3, curvature: DMat3) {
    let positive = |m: DMat3| {
        let c = m.to_cols_array_2d();
        c[0][0] > 0.0 && c[0][0] * c[1][1] - c[0][1] * c[1][0] > 0.0 && m.determinant() > 0.0
    };
    let mut scale = 1.0;
    while scale > 1.0 / 64.0 && !positive(0.9 * weight + scale * curvature) {
        scale *= 0.5;
    }
    if scale <= 1.0 / 64.0 {
        return;
    }
    let c = (scale * curvature).to_cols_array_2d();
    for (col, column) in c.iter().enumerate() {
        for (row, &value) in column.iter().enumerate().take(col + 1) {
            if value != 0.0 {
                qp.add_hessian(at + row, at + col, value);
            }
        }
    }
}

/// Disjoint sets over `0..n` (path halving, union by index: the root is the smallest member's
/// representative found first, deterministic).
#[derive(Debug)]
pub(crate) struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    /// `n` singletons.
    pub(crate) fn new(n: usize) -> Self {
        Self {
            parent: (0..n).collect(),
        }
    }

    /// The representative of `i`'s set.
    pub(crate) fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    /// Joins the sets of `a` and `b` (the smaller representative becomes the root).
    pub(crate) fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = (ra.min(rb), ra.max(rb));
            self.parent[hi] = lo;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::f64::consts::FRAC_PI_4;

    use glam::DQuat;

    use super::*;
    use crate::rigid::world::Joint;
    use crate::scene::rigid::{BodyMotion, BodyShape, BodySpec, ObaSettings, ShellMaterial};

    fn stick(position: DVec3, angle: f64, motion: BodyMotion) -> Body {
        cuboid(
            DVec3::new(10.0, 2.0, 2.0),
            position,
            DQuat::from_rotation_z(angle),
            motion,
        )
    }

    fn cuboid(size: DVec3, position: DVec3, orientation: DQuat, motion: BodyMotion) -> Body {
        Body::new(&BodySpec {
            name: format!("box at {position}"),
            shape: BodyShape::Box { size },
            density: 1.0,
            position,
            orientation,
            velocity: DVec3::ZERO,
            angular_velocity: DVec3::ZERO,
            motion,
            shell: ShellMaterial::default(),
        })
    }

    /// A stick along x from -5 to 5 and one turned 45 degrees whose end faces the first's
    /// corner (5, 1) from 0.5 cm away (their boxes overlap), at rest: their pair is left out
    /// unless a joint links them.
    fn close_pairs(joints: Vec<Joint>) -> usize {
        let bodies = vec![
            stick(DVec3::ZERO, 0.0, BodyMotion::Fixed),
            stick(DVec3::new(8.89, 4.89, 0.0), FRAC_PI_4, BodyMotion::Dynamic),
        ];
        let world = World {
            parts: vec![(0, 0), (1, 0)],
            joints,
            settings: ObaSettings::default(),
        };
        let poses: Vec<Pose> = bodies.iter().map(|b| b.pose).collect();
        let parts = world.pose_parts(&bodies, &poses);
        let distance = separation(&parts[0], &parts[1]).distance;
        assert!((distance - 0.5).abs() < 0.01, "{distance}");
        let u = Update::new(&world, &bodies, &poses, &[false, true], &Memory::default());
        u.pairs.len()
    }

    #[test]
    fn jointed_bodies_are_a_close_pair_whatever_their_targets() {
        assert_eq!(close_pairs(Vec::new()), 0);
        let joint = Joint {
            bodies: [0, 1],
            anchors: [DVec3::new(5.5, 1.5, 0.0), DVec3::new(-5.5, 0.0, 0.0)],
        };
        assert_eq!(close_pairs(vec![joint]), 1);
    }

    /// Two tilted 5 cm cubes stacked on a fixed slab, their targets 2 and 7 cm lower and
    /// turned: every vertex of the cubes' pair is critical. Leaving out the rows that others
    /// imply within the bounds leaves out some, and the QP's poses are the full QP's, at full
    /// trust and at a quarter of it (tighter bounds, more rows implied).
    #[test]
    fn rows_implied_within_the_bounds_leave_the_qp_s_poses_as_they_are() {
        let tilt = |angle: f64| DQuat::from_rotation_z(angle) * DQuat::from_rotation_x(0.5 * angle);
        let bodies = vec![
            cuboid(
                DVec3::new(40.0, 4.0, 40.0),
                DVec3::new(0.0, -2.0, 0.0),
                DQuat::IDENTITY,
                BodyMotion::Fixed,
            ),
            cuboid(
                DVec3::splat(5.0),
                DVec3::new(0.0, 2.56, 0.0),
                tilt(0.03),
                BodyMotion::Dynamic,
            ),
            cuboid(
                DVec3::splat(5.0),
                DVec3::new(0.7, 7.75, 0.4),
                tilt(-0.05),
                BodyMotion::Dynamic,
            ),
        ];
        let world = World {
            parts: vec![(0, 0), (1, 0), (2, 0)],
            joints: Vec::new(),
            settings: ObaSettings::default(),
        };
        let targets: Vec<Pose> = bodies
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let mut pose = b.pose;
                if i > 0 {
                    let fall = DVec3::new(0.2, -2.0 - 5.0 * (i - 1) as f64, 0.1);
                    pose = pose.perturbed(fall, DVec3::new(0.05, 0.1, -0.2));
                }
                pose
            })
            .collect();
        let mut u = Update::new(
            &world,
            &bodies,
            &targets,
            &[false, true, true],
            &Memory::default(),
        );
        u.find_critical();
        assert_eq!(
            u.pairs.len(),
            3,
            "the cubes, the lower one and the slab, and the upper one's target near the slab"
        );
        let cubes = &u.pairs[u.index[&(1, 2)]];
        assert_eq!(
            (cubes.critical.0.len(), cubes.critical.1.len()),
            (8, 8),
            "the upper cube's target is 5 cm into the lower one: all their vertices are critical"
        );
        for tau in [1.0, 0.25] {
            let all = GroupQp::build(&u, &[1, 2], &targets, tau, Rows::All);
            let screened = GroupQp::build(&u, &[1, 2], &targets, tau, Rows::Screened);
            let (n_all, n_screened) = (all.qp.inequalities.len(), screened.qp.inequalities.len());
            assert!(
                n_screened + 6 <= n_all,
                "tau {tau}: {n_screened} of {n_all} rows"
            );
            let x_all = all.qp.solve().unwrap();
            let x_screened = screened.qp.solve().unwrap();
            let largest = x_all[..12].iter().fold(0.0_f64, |m, x| m.max(x.abs()));
            assert!(largest > 0.1, "tau {tau}: the cubes move ({largest})");
            for k in 0..12 {
                let d = (x_all[k] - x_screened[k]).abs();
                assert!(
                    d <= 1e-6 * largest,
                    "tau {tau}, variable {k}: {} against {}",
                    x_screened[k],
                    x_all[k]
                );
            }
        }
    }
}
